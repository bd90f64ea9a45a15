// Stands in for dist/mpi.cpp in a build with -DFRUGAL_MPI=OFF.
#include "core/error.h"
#include "dist/communicators.h"

namespace frugal {

bool mpi_built() {
  return false;
}

std::unique_ptr<Communicator> mpi_communicator(const MpiOptions&) {
  throw Error(
      "MPI was not built: configure with -DFRUGAL_MPI=ON (the default; Debian's "
      "libopenmpi-dev) to run several ranks");
}

}  // namespace frugal
