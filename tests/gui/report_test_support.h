// tests/gui/report_test_support.h — what the report tests share: reading a written file, counting a
// string in it, text compared across line breaks, a scratch folder per test, and the text of one PDF page as pdftotext reads it (the
// same text a reader's viewer would show, so "page 1 holds the answer" is checked on the PDF itself).
//
//   std::optional<std::string> page1 = pdf_page_text(dir.path("r.pdf"), 1);   // nullopt: no pdftotext
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace kvplan::gui::testing {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The text with every space, line break and hyphen dropped, for "does page 1 say X": pdftotext
// breaks lines where the PDF wraps them and joins a word wrapped after a hyphen without it
// ("nvidia-" + "smi" reads "nvidiasmi"), so only the other characters can be compared.
inline std::string squeezed(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t' && c != '\f' && c != '-') out += c;
  }
  return out;
}

// The text of page `page` (1-based), or nullopt when pdftotext (poppler-utils) is not installed.
inline std::optional<std::string> pdf_page_text(const std::string& pdf, int page) {
  if (std::system("command -v pdftotext >/dev/null 2>&1") != 0) return std::nullopt;
  const std::string cmd = "pdftotext -enc UTF-8 -f " + std::to_string(page) + " -l " + std::to_string(page) + " '" +
                          pdf + "' - 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  const int status = pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << ": " << out;
  return out;
}

// A fresh folder per test, removed with its files when the test ends.
class ReportFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kvplan_report_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

}  // namespace kvplan::gui::testing
