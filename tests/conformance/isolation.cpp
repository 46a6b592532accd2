// Process isolation for the conformance runner (see conformance.h): one test in a
// forked child whose result comes back through a pipe, with a deadline.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>

#include "tests/conformance/conformance.h"

namespace dl::test::conformance {

Outcome run_isolated(const fs::path& dir, int timeout_s) {
  int fds[2];
  if (pipe(fds) != 0) return {Status::kFail, std::string("pipe: ") + std::strerror(errno)};
  std::cout.flush();
  std::cerr.flush();
  pid_t pid = fork();
  if (pid < 0) return {Status::kFail, std::string("fork: ") + std::strerror(errno)};
  if (pid == 0) {
    close(fds[0]);
    Outcome o = run_test(dir);
    std::string msg(1, static_cast<char>(o.status));
    msg += o.message.substr(0, 4000);
    for (size_t off = 0; off < msg.size();) {
      ssize_t n = write(fds[1], msg.data() + off, msg.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string buf;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool timed_out = false;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    int r = poll(&pfd, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;  // loop re-checks the deadline
    char chunk[4096];
    ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n <= 0) break;  // EOF: the child is done (or died)
    buf.append(chunk, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return {Status::kFail, "timed out after " + std::to_string(timeout_s) + " s"};
  if (WIFSIGNALED(wstatus))
    return {Status::kFail, std::string("crashed: ") + strsignal(WTERMSIG(wstatus))};
  if (buf.empty()) return {Status::kFail, "child exited (status " + std::to_string(WEXITSTATUS(wstatus)) + ") without a result"};
  return {static_cast<Status>(buf[0]), buf.substr(1)};
}

}  // namespace dl::test::conformance
