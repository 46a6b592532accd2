// Running a batch's cases. By default each case runs in a forked child that sends its
// JSON result through a pipe, so a crash (a signal) or a timeout (SIGKILL) ends only
// that case; the parent is single-threaded and multiplexes the pipes with poll().
// With in_process, worker threads run the cases (faster to start, but a crash ends the
// batch and there is no timeout). Either way each case computes on case_threads()
// threads (1 when several run at once, unless --threads says otherwise), and results
// are handed out in manifest order.
#include <algorithm>
#include <csignal>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <iostream>
#include <mutex>
#include <new>
#include <thread>

#include "cli/batch_command.h"
#include "converter/errors.h"
#include "runtime/threads.h"

namespace dl::cli {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The case's result as {"status", "error", "report"}; never throws.
json run_one(const CaseSpec& c) {
  if (!c.load_error.empty()) return {{"status", "input_error"}, {"error", c.load_error}};
  try {
    CaseRunOptions run;
    run.progress = false;
    run.handle_signals = false;
    CaseResult r = diagnose_case(c.options, run);
    return {{"status", "ok"}, {"report", std::move(r.report)}};
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInternal) return {{"status", "crashed"}, {"error", std::string("internal error: ") + e.what()}};
    return {{"status", "input_error"}, {"error", e.what()}};
  } catch (const std::bad_alloc&) {
    return {{"status", "input_error"}, {"error", "out of memory"}};
  } catch (const std::exception& e) {
    return {{"status", "crashed"}, {"error", std::string("internal error: ") + e.what()}};
  }
}

CaseOutcome outcome_from(const json& j) {
  CaseOutcome o;
  o.status = j.value("status", "crashed");
  o.error = j.value("error", "");
  if (j.contains("report")) o.report = j["report"];
  return o;
}

std::string signal_name(int sig) {
  static const std::pair<int, const char*> names[] = {
      {SIGSEGV, "SIGSEGV"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"}, {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},
      {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"}, {SIGPIPE, "SIGPIPE"}, {SIGTRAP, "SIGTRAP"}};
  for (const auto& [n, name] : names)
    if (n == sig) return sig == SIGKILL ? std::string(name) + " (out of memory?)" : name;
  return "signal " + std::to_string(sig);
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

// Hands results out in index order.
struct InOrder {
  const CaseDone& done;
  const std::vector<CaseOutcome>& out;
  std::vector<bool> finished;
  size_t next = 0;
  void finish(size_t k) {
    finished[k] = true;
    for (; next < finished.size() && finished[next]; ++next)
      if (done) done(next, out[next]);
  }
};

struct Child {
  size_t k;
  pid_t pid;
  int fd;
  std::string out;
  Clock::time_point start;
  bool eof = false;
};

[[noreturn]] void child_main(const CaseSpec& c, int fd, int threads) {
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // do not outlive a killed batch
#endif
  std::signal(SIGPIPE, SIG_DFL);
  const int devnull = open("/dev/null", O_WRONLY);
  if (devnull >= 0) dup2(devnull, 1);  // the batch's stdout is for its own lines
  if (threads > 0) rt::set_compute_threads(threads);
  const std::string text = run_one(c).dump(-1, ' ', false, json::error_handler_t::replace);
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(3);
    done += static_cast<size_t>(n);
  }
  _exit(0);
}

void run_forked(const std::vector<CaseSpec>& cases, int jobs, int threads, double timeout_s,
                std::vector<CaseOutcome>& out, InOrder& order) {
  std::vector<Child> running;
  size_t next = 0;
  std::cout.flush();
  std::cerr.flush();
  while (next < cases.size() || !running.empty()) {
    while (next < cases.size() && static_cast<int>(running.size()) < jobs) {
      const size_t k = next++;
      if (!cases[k].load_error.empty()) {
        out[k] = outcome_from(run_one(cases[k]));
        order.finish(k);
        continue;
      }
      int p[2];
      if (pipe2(p, O_CLOEXEC) != 0) throw ResourceError(std::string("batch: cannot create a pipe: ") + std::strerror(errno));
      const pid_t pid = fork();
      if (pid < 0) throw ResourceError(std::string("batch: cannot fork: ") + std::strerror(errno));
      if (pid == 0) {
        close(p[0]);
        child_main(cases[k], p[1], threads);
      }
      close(p[1]);
      running.push_back({k, pid, p[0], {}, Clock::now()});
    }
    if (running.empty()) continue;
    // Wait for output, up to the nearest deadline.
    std::vector<pollfd> fds;
    int wait_ms = -1;
    for (const Child& c : running) {
      fds.push_back({c.fd, POLLIN, 0});
      if (timeout_s > 0) {
        const double left = timeout_s - since(c.start);
        const int ms = std::max(0, static_cast<int>(std::ceil(left * 1000)));
        wait_ms = wait_ms < 0 ? ms : std::min(wait_ms, ms);
      }
    }
    if (poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR)
      throw InternalError(std::string("batch: poll failed: ") + std::strerror(errno));
    for (size_t i = 0; i < running.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      const ssize_t n = read(running[i].fd, buf, sizeof buf);
      if (n > 0) running[i].out.append(buf, static_cast<size_t>(n));
      else if (n == 0 || errno != EINTR) running[i].eof = true;
    }
    for (size_t i = 0; i < running.size();) {
      Child& c = running[i];
      const bool timed_out = !c.eof && timeout_s > 0 && since(c.start) >= timeout_s;
      if (!c.eof && !timed_out) {
        ++i;
        continue;
      }
      if (timed_out) kill(c.pid, SIGKILL);
      int status = 0;
      while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {}
      close(c.fd);
      CaseOutcome o;
      if (timed_out) {
        o.status = "timeout";
        o.error = "timeout after " + seconds_text(timeout_s) + " s";
      } else if (WIFSIGNALED(status)) {
        o.status = "crashed";
        o.error = "crashed: " + signal_name(WTERMSIG(status));
      } else {
        const json j = json::parse(c.out, nullptr, /*allow_exceptions=*/false);
        if (j.is_object()) {
          o = outcome_from(j);
        } else {
          o.status = "crashed";
          o.error = "crashed: exited with status " + std::to_string(WEXITSTATUS(status)) + " without a result";
        }
      }
      o.seconds = since(c.start);
      out[c.k] = std::move(o);
      const size_t k = c.k;
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      order.finish(k);
    }
  }
}

void run_threads(const std::vector<CaseSpec>& cases, int jobs, int threads, std::vector<CaseOutcome>& out,
                 InOrder& order) {
  std::mutex m;
  size_t next = 0;
  // One thread per case: set before the workers start (Eigen's thread count is one
  // process-wide value; setting it from every worker was a data race, found by TSan).
  if (threads > 0) rt::set_compute_threads(threads);
  auto worker = [&] {
    for (;;) {
      size_t k;
      {
        std::lock_guard<std::mutex> lock(m);
        if (next >= cases.size()) return;
        k = next++;
      }
      const auto t0 = Clock::now();
      CaseOutcome o = outcome_from(run_one(cases[k]));
      o.seconds = since(t0);
      std::lock_guard<std::mutex> lock(m);
      out[k] = std::move(o);
      order.finish(k);
    }
  };
  std::vector<std::thread> workers;
  for (int t = 1; t < std::min<int>(jobs, static_cast<int>(cases.size())); ++t) workers.emplace_back(worker);
  worker();
  for (std::thread& t : workers) t.join();
  if (threads > 0) rt::set_compute_threads(0);
}

}  // namespace

int case_threads(int jobs, int threads) {
  if (threads > 0) return threads;
  return jobs > 1 ? 1 : 0;
}

std::string oversubscription_warning(int jobs, int threads, int cores) {
  const int64_t used = int64_t(std::max(jobs, 1)) * std::max(threads, 1);
  if (cores < 1 || used <= cores) return "";
  return "warning: --jobs " + std::to_string(jobs) + " x --threads " + std::to_string(threads) + " = " +
         std::to_string(used) + " compute threads on " + std::to_string(cores) +
         " cores: the cases will compete for the cores (results are unchanged, only slower)";
}

std::vector<CaseOutcome> run_cases(const std::vector<CaseSpec>& cases, int jobs, int threads, double timeout_s,
                                   bool in_process, const CaseDone& done) {
  if (jobs < 1) jobs = 1;
  if (in_process && timeout_s > 0)
    throw ConfigError("--timeout needs each case in its own process: drop --in-process");
  std::vector<CaseOutcome> out(cases.size());
  InOrder order{done, out, std::vector<bool>(cases.size(), false)};
  if (in_process)
    run_threads(cases, jobs, threads, out, order);
  else
    run_forked(cases, jobs, threads, timeout_s, out, order);
  return out;
}

}  // namespace dl::cli
