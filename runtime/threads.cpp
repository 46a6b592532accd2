#include "runtime/threads.h"

#include <Eigen/Core>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace dl::rt {

void set_compute_threads(int threads) {
  Eigen::setNbThreads(threads > 0 ? threads : 0);
#ifdef _OPENMP
  omp_set_num_threads(threads > 0 ? threads : omp_get_num_procs());
#endif
}

}  // namespace dl::rt
