// The communicators (core/communicator.h): MPI over host memory, and one rank alone.
// MPI appears only in dist/mpi.cpp (built with -DFRUGAL_MPI=ON, the default).
#pragma once

#include <memory>

#include "core/communicator.h"

namespace frugal {

struct MpiOptions {
  // A peer not heard from for this long (each rank's communication thread sends a heartbeat to
  // every peer five times a second, busy or not) is dead or stopped: every pending and later
  // collective fails naming it, and the job is aborted when the communicator is destroyed.
  double timeout_seconds = 60;
};

// Whether this build has the MPI communicator (-DFRUGAL_MPI=ON).
bool mpi_built();
// Whether this process was started by an MPI launcher (mpirun, mpiexec) as one of its ranks.
bool launched_by_mpi();
// The world communicator: MPI_COMM_WORLD, initialised on a communication thread of its own
// that alone calls MPI (collectives progress there, overlapped with the caller's work). One
// per process. Throws when MPI was not built or fails to start.
std::unique_ptr<Communicator> mpi_communicator(const MpiOptions& options = {});
// A group of one: collectives are copies (and allreduce's prescale).
std::unique_ptr<Communicator> self_communicator();

}  // namespace frugal
