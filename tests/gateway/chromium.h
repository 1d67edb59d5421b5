// Headless Chromium (Debian's `chromium` package) for tests of the dashboard page: the
// DOM after the page's scripts ran, and screenshots. Each run gets a fresh profile
// directory and its own process group, and is killed (with every process it started)
// when it overruns its time limit.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace sy::testing {

// The browser binary: $SY_CHROMIUM if set, else `chromium` or `chromium-browser` on the
// PATH; empty when there is none.
inline std::string chromium_path() {
  if (const char* env = std::getenv("SY_CHROMIUM"); env && *env) return env;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    for (const char* name : {"chromium", "chromium-browser"}) {
      const std::string candidate = dir + "/" + name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  return {};
}

inline constexpr const char* kChromiumMissing =
    "chromium is not installed: the dashboard test needs Debian's chromium package "
    "(scripts/setup.sh installs it; or run: apt-get install -y chromium)";

struct ChromiumRun {
  int exit_code = -1;  // -1: killed or died of a signal
  bool timed_out = false;
  std::string out;  // stdout (the DOM for --dump-dom)
  std::string err;  // stderr, for failure messages
};

inline std::string read_text_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs `chromium --headless ... <args>` and waits at most `limit`.
inline ChromiumRun run_chromium(const std::vector<std::string>& args,
                                std::chrono::seconds limit = std::chrono::seconds(90)) {
  ChromiumRun run;
  const std::string browser = chromium_path();
  if (browser.empty()) {
    run.err = kChromiumMissing;
    return run;
  }
  std::string tmpl = (std::filesystem::temp_directory_path() / "sy-chromium-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) {
    run.err = "mkdtemp failed";
    return run;
  }
  const std::filesystem::path dir = tmpl;
  const std::string out_path = (dir / "stdout").string(), err_path = (dir / "stderr").string();
  std::vector<std::string> all = {browser,
                                  "--headless",
                                  "--no-sandbox",
                                  "--disable-gpu",
                                  "--disable-dev-shm-usage",
                                  "--no-first-run",
                                  "--disable-background-networking",
                                  "--disable-component-update",
                                  "--disable-sync",
                                  "--hide-scrollbars",
                                  "--user-data-dir=" + (dir / "profile").string()};
  all.insert(all.end(), args.begin(), args.end());
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);  // the browser's helpers join this group, so one kill reaches them all
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(out, 1);
    ::dup2(err, 2);
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (pid > 0) {
    ::setpgid(pid, pid);  // also here, so the group exists before any kill below
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    for (;;) {
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        run.timed_out = true;
        ::kill(-pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(-pid, SIGKILL);  // helpers that outlived the browser
  }
  run.out = read_text_file(out_path);
  run.err = read_text_file(err_path);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return run;
}

// The DOM after the page's scripts had `budget_ms` of virtual time (timers and polls
// fire without waiting in real time).
inline ChromiumRun chromium_dump_dom(const std::string& url, int budget_ms = 5000) {
  return run_chromium({"--virtual-time-budget=" + std::to_string(budget_ms), "--dump-dom", url});
}

inline ChromiumRun chromium_screenshot(const std::string& url, const std::string& png_path,
                                       int budget_ms = 5000,
                                       const std::string& window = "1280,900") {
  return run_chromium({"--virtual-time-budget=" + std::to_string(budget_ms),
                       "--window-size=" + window, "--screenshot=" + png_path, url});
}

}  // namespace sy::testing
