// Threads of the numeric kernels (Eigen, OpenMP). A batch that runs several cases at
// once makes each case single-threaded, so the cases do not compete for the cores.
#pragma once

namespace dl::rt {

// Limits Eigen and OpenMP in the calling thread (and, for Eigen, the process) to
// `threads` threads; 0 restores the defaults.
void set_compute_threads(int threads);

}  // namespace dl::rt
