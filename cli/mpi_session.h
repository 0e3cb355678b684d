// mpi_session.h — `mpirun -np N kvplan plan ...`: every rank enumerates the same candidates, each
// round's candidates are shared out round-robin (candidate k of a round on rank k mod N), and every
// rank gathers every result, so each rank holds the whole plan; rank 0 prints it. The answer is the
// same byte for byte as one process's (deployment.h: rounds have a fixed size).
//
// kvplan itself links no MPI: launched by mpirun (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK set)
// it hands the command to kvplan-mpi next to it (KVPLAN_BUILD_MPI), which is kvplan's main with an
// MpiSession around it.
#pragma once

namespace kvplan::cli {

// True when this process was started by mpirun/srun with more than one rank or under PMIx.
bool launched_by_mpirun();

#ifdef KVPLAN_MPI_MAIN
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);  // MPI_Init; installs plan_distribution() for the ranks
  ~MpiSession();                        // MPI_Finalize
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
};
#endif

}  // namespace kvplan::cli
