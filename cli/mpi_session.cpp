// The MPI side of `kvplan plan` (mpi_session.h). Built only into kvplan-mpi.
#include "mpi_session.h"

#include <mpi.h>

#include <string>
#include <vector>

#include "commands.h"
#include "kvplan/core/error.h"

namespace kvplan::cli {

namespace {

int rank_of() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int size_of() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// Every rank's strings, in rank order, on every rank.
std::vector<std::string> all_gather(const std::string& mine) {
  const int n = size_of();
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(n), offsets(n);
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < n; ++r) {
    offsets[r] = total;
    total += lengths[r];
  }
  std::string all(static_cast<size_t>(total), '\0');
  MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int r = 0; r < n; ++r) out.push_back(all.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(lengths[r])));
  return out;
}

std::vector<nlohmann::json> run_round_on_ranks(const std::vector<size_t>& round,
                                               const std::function<nlohmann::json(size_t)>& evaluate) {
  const int rank = rank_of(), n = size_of();
  // This rank's share: {"k": position in the round, "r": result} or {"error": message}. An error
  // is gathered like a result, so every rank throws it and none waits forever.
  nlohmann::json mine = nlohmann::json::array();
  for (size_t k = static_cast<size_t>(rank); k < round.size(); k += static_cast<size_t>(n)) {
    try {
      mine.push_back({{"k", k}, {"r", evaluate(round[k])}});
    } catch (const std::exception& e) {
      mine.push_back({{"k", k}, {"error", e.what()}});
    }
  }
  std::vector<nlohmann::json> out(round.size());
  for (const std::string& text : all_gather(mine.dump())) {
    for (const nlohmann::json& item : nlohmann::json::parse(text)) {
      if (item.contains("error")) throw ConfigError(item.at("error").get<std::string>());
      out[item.at("k").get<size_t>()] = item.at("r");
    }
  }
  return out;
}

bool any_rank(bool mine) {
  int local = mine ? 1 : 0, any = 0;
  MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any != 0;
}

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv) {
  MPI_Init(argc, argv);
  PlanDistribution& d = plan_distribution();
  d.run_round = run_round_on_ranks;
  d.root = rank_of() == 0;
  d.any_rank = any_rank;
  d.ranks = size_of();
}

MpiSession::~MpiSession() { MPI_Finalize(); }

}  // namespace kvplan::cli
