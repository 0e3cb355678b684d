#include "kvplan/plan/setting_help.h"

#include <fmt/format.h>

namespace kvplan::plan {

std::string setting_help(const Setting& s) {
  const std::string def = s.default_text.empty() ? std::string("unset") : s.default_text;
  return fmt::format("{}. Unit: {}. Default: {}{}.", s.description, s.unit, def,
                     s.default_note.empty() ? std::string() : "; " + s.default_note);
}

}  // namespace kvplan::plan
