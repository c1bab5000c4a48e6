// Fault tests of every writer (issue 18, item 3): each writer of writer_fault_helper (core's files, projects and
// recovery files, tracks, profiles, PNG frames, safetensors, videos; with the UI: settings, performance reports,
// screenshots) is cut off by `ulimit -f` (with SIGXFSZ ignored: the write fails; and with its default action: the
// process dies), runs out of space on a small tmpfs, meets a read-only file system, and is killed with SIGKILL
// at random moments. After every fault the previous file must read back whole.
//
// The tmpfs cases mount in a private mount namespace of a child process (nothing leaks into the machine); they
// are skipped with a message when the test may not mount (not root, no CAP_SYS_ADMIN). The read-only case falls
// back to a chmod 0555 folder for a non-root user. Each case prints one "fault matrix:" line per writer.
// TRACKSCOPE_WRITER_FAULT_KILLS sets the number of kills per writer (default 4).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/io/atomic_file.h"

namespace trackscope {
namespace {

namespace fs = std::filesystem;

struct RunOptions {
  rlim_t file_size_limit = RLIM_INFINITY;
  bool ignore_sigxfsz = true;
};

struct RunResult {
  bool exited = false;
  int exit_code = -1;
  int signal = 0;
  std::string output;
  std::string describe() const {
    return (exited ? fmt::format("exit {}", exit_code) : fmt::format("signal {}", signal)) + ": " + output;
  }
};

// Starts the helper with `args`. With `kill_after`, sends SIGKILL once the helper has printed its first line
// (`kill_after` receives it) and the delay it returns has passed.
RunResult run_helper(const std::vector<std::string>& args, const RunOptions& options = {},
                     const std::function<std::chrono::microseconds(const std::string& first_line)>& kill_after = {}) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fds[1], 1);
    ::dup2(pipe_fds[1], 2);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    if (options.file_size_limit != RLIM_INFINITY) {
      const rlimit limit{options.file_size_limit, options.file_size_limit};
      ::setrlimit(RLIMIT_FSIZE, &limit);
    }
    ::signal(SIGXFSZ, options.ignore_sigxfsz ? SIG_IGN : SIG_DFL);  // kept across exec
    std::vector<char*> argv;
    std::string helper = TRACKSCOPE_WRITER_FAULT_HELPER;
    argv.push_back(helper.data());
    std::vector<std::string> copies = args;
    for (std::string& a : copies) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(helper.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  RunResult result;
  if (kill_after) {
    char c = 0;
    while (::read(pipe_fds[0], &c, 1) == 1 && c != '\n') result.output.push_back(c);
    std::this_thread::sleep_for(kill_after(result.output));
    ::kill(pid, SIGKILL);
    result.output.push_back('\n');
  }
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof(buffer))) > 0;) result.output.append(buffer, n);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exited = WIFEXITED(status);
  result.exit_code = result.exited ? WEXITSTATUS(status) : -1;
  result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  while (!result.output.empty() && result.output.back() == '\n') result.output.pop_back();
  return result;
}

std::vector<std::string> helper_writers() {
  const RunResult listed = run_helper({"list"});
  std::vector<std::string> names;
  std::istringstream lines(listed.output);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

// "version N" from a check, or -1 (with the reason in `why`).
int64_t checked_version(const std::string& writer, const fs::path& path, std::string* why = nullptr) {
  const RunResult checked = run_helper({"check", writer, path.string()});
  long long version = -1;
  if (!checked.exited || checked.exit_code != 0 || std::sscanf(checked.output.c_str(), "version %lld", &version) != 1) {
    if (why != nullptr) *why = checked.describe();
    return -1;
  }
  return version;
}

// Files in `folder` other than the target (temporary files left behind).
std::vector<std::string> strays(const fs::path& folder, const fs::path& target) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (entry.path().filename() != target.filename() && entry.path().filename() != "stages.csv" &&
        entry.path().filename() != "filler") {
      found.push_back(entry.path().filename().string());
    }
  }
  return found;
}

// The target file of `writer` in `folder`.
fs::path target_in(const fs::path& folder, const std::string& writer) {
  if (writer == "video") return folder / "export.avi";
  if (writer == "png" || writer == "qimage") return folder / "frame.png";
  if (writer == "tracks_npz") return folder / "tracks.npz";
  if (writer == "tracks_csv") return folder / "tracks.csv";
  if (writer == "settings") return folder / "settings.ini";
  if (writer == "report") return folder / "profile.json";
  return folder / (writer + ".out");
}

fs::path fresh_folder(const std::string& name) {
  const fs::path folder = fs::path(TRACKSCOPE_TEST_OUTPUT_DIR) / "writer_faults" / name;
  fs::remove_all(folder);
  fs::create_directories(folder);
  return folder;
}

// The system's reason in a writer's message ("... (the disk is full); the previous file is unchanged").
std::string reason_of(const std::string& message) {
  const size_t open = message.rfind('(');
  const size_t close = message.find(')', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || close == std::string::npos) return message.substr(0, 80);
  return message.substr(open + 1, close - open - 1);
}

void print_matrix(const std::string& writer, const std::string& fault, const std::string& outcome) {
  std::printf("fault matrix: %-14s %-26s %s\n", writer.c_str(), fault.c_str(), outcome.c_str());
}

class WriterFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    writers_ = helper_writers();
    ASSERT_GE(writers_.size(), 10u) << "the helper lists too few writers";
  }
  std::vector<std::string> writers_;
};

// ---- cut-off writes (ulimit -f) --------------------------------------------------------------------------

TEST_F(WriterFaults, CutOffWriteFailsCleanlyAndKeepsThePreviousFile) {
  for (const std::string& writer : writers_) {
    SCOPED_TRACE(writer);
    const fs::path folder = fresh_folder("cutoff_" + writer);
    const fs::path target = target_in(folder, writer);
    ASSERT_EQ(run_helper({"write", writer, target.string(), "1"}).exit_code, 0);
    ASSERT_EQ(checked_version(writer, target), 1);
    // 128 KiB: every file of the helper is larger, so the write is cut in the middle.
    const RunResult cut = run_helper({"write", writer, target.string(), "2"}, {128 << 10, true});
    EXPECT_TRUE(cut.exited && cut.exit_code == 1) << cut.describe();
    std::string why;
    EXPECT_EQ(checked_version(writer, target, &why), 1) << why;
    EXPECT_EQ(strays(folder, target), std::vector<std::string>{});
    print_matrix(writer, "ulimit -f (EFBIG)",
                 fmt::format("write fails: \"{}\"; previous file intact, nothing left behind", reason_of(cut.output)));
  }
}

TEST_F(WriterFaults, CutOffWriteKilledBySigxfszKeepsThePreviousFile) {
  for (const std::string& writer : writers_) {
    SCOPED_TRACE(writer);
    const fs::path folder = fresh_folder("sigxfsz_" + writer);
    const fs::path target = target_in(folder, writer);
    ASSERT_EQ(run_helper({"write", writer, target.string(), "1"}).exit_code, 0);
    const RunResult cut = run_helper({"write", writer, target.string(), "2"}, {128 << 10, false});
    EXPECT_EQ(cut.signal, SIGXFSZ) << cut.describe();
    std::string why;
    EXPECT_EQ(checked_version(writer, target, &why), 1) << why;
    const size_t left = strays(folder, target).size();
    // The next successful write removes what the killed one left (Trackscope's temporary files).
    ASSERT_EQ(run_helper({"write", writer, target.string(), "2"}).exit_code, 0);
    EXPECT_EQ(checked_version(writer, target), 2);
    const std::vector<std::string> after = strays(folder, target);
    if (writer != "settings") {
      EXPECT_EQ(after, std::vector<std::string>{});
    }
    print_matrix(writer, "ulimit -f (SIGXFSZ kills)",
                 fmt::format("process killed; previous file intact; {} temporary file(s) left, {} after the next "
                             "write",
                             left, after.size()));
  }
}

// ---- a full and a read-only file system (a tmpfs in a private mount namespace) ---------------------------

// Runs `body` in a child process with a private mount namespace and a small tmpfs mounted on `folder`. Returns
// the child's report; "skip: ..." when mounting is not allowed here.
std::string in_tmpfs(const fs::path& folder, size_t bytes, const std::function<std::string()>& body) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return "fail: pipe";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    auto report = [&](const std::string& text) {
      (void)!::write(pipe_fds[1], text.data(), text.size());
      ::_exit(0);
    };
    if (::unshare(CLONE_NEWNS) != 0) report(fmt::format("skip: cannot make a mount namespace ({})", strerror(errno)));
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      report(fmt::format("skip: cannot make mounts private ({})", strerror(errno)));
    const std::string size = fmt::format("size={}", bytes);
    if (::mount("tmpfs", folder.c_str(), "tmpfs", 0, size.c_str()) != 0)
      report(fmt::format("skip: cannot mount a tmpfs ({})", strerror(errno)));
    report(body());
  }
  ::close(pipe_fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof(buffer))) > 0;) text.append(buffer, n);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return text.empty() ? "fail: the child reported nothing" : text;
}

// Leaves about `free_bytes` free on the file system of `folder` (a "filler" file takes the rest).
bool fill_leaving(const fs::path& folder, uint64_t free_bytes) {
  struct statvfs space {};
  if (::statvfs(folder.c_str(), &space) != 0) return false;
  const uint64_t available = static_cast<uint64_t>(space.f_bavail) * space.f_frsize;
  if (available <= free_bytes) return true;
  const int fd = ::open((folder / "filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return false;
  std::string zeros(size_t{1} << 16, '\0');
  uint64_t left = available - free_bytes;
  while (left > 0) {
    const ssize_t n = ::write(fd, zeros.data(), std::min<uint64_t>(left, zeros.size()));
    if (n <= 0) break;
    left -= static_cast<uint64_t>(n);
  }
  ::close(fd);
  return true;
}

TEST_F(WriterFaults, FullFileSystemFailsCleanlyAndKeepsThePreviousFile) {
  for (const std::string& writer : writers_) {
    SCOPED_TRACE(writer);
    const fs::path folder = fresh_folder("full_" + writer);
    const fs::path target = target_in(folder, writer);
    const std::string report = in_tmpfs(folder, size_t{16} << 20, [&]() -> std::string {
      if (run_helper({"write", writer, target.string(), "1"}).exit_code != 0) return "fail: the first write failed";
      if (!fill_leaving(folder, 96 << 10)) return "fail: could not fill the file system";
      const RunResult full = run_helper({"write", writer, target.string(), "2"});
      if (!full.exited || full.exit_code != 1) return "fail: the write on a full disk did not fail: " + full.describe();
      std::string why;
      if (checked_version(writer, target, &why) != 1) return "fail: the previous file is damaged: " + why;
      if (!strays(folder, target).empty()) return "fail: temporary files left: " + strays(folder, target).front();
      return "ok: write fails: \"" + reason_of(full.output) + "\"; previous file intact, nothing left behind";
    });
    if (report.rfind("skip:", 0) == 0) GTEST_SKIP() << "a full file system needs a tmpfs mount: " << report;
    EXPECT_EQ(report.substr(0, 3), "ok:") << report;
    print_matrix(writer, "full file system", report.substr(std::min<size_t>(report.size(), 4)));
  }
}

TEST_F(WriterFaults, ReadOnlyTargetIsRefusedBeforeWritingAndKeepsThePreviousFile) {
  const bool root = ::geteuid() == 0;
  for (const std::string& writer : writers_) {
    SCOPED_TRACE(writer);
    const fs::path folder = fresh_folder("readonly_" + writer);
    const fs::path target = target_in(folder, writer);
    auto scenario = [&](const std::function<bool()>& make_read_only) -> std::string {
      if (run_helper({"write", writer, target.string(), "1"}).exit_code != 0) return "fail: the first write failed";
      if (!make_read_only()) return "fail: could not make the folder read-only";
      const core::Status probe = core::io::check_writable(target);
      if (probe.ok()) return "fail: check_writable accepted a read-only target";
      const RunResult refused = run_helper({"write", writer, target.string(), "2"});
      if (!refused.exited || refused.exit_code != 1) return "fail: the write did not fail: " + refused.describe();
      std::string why;
      if (checked_version(writer, target, &why) != 1) return "fail: the previous file is damaged: " + why;
      return "ok: check_writable refuses: \"" + reason_of(probe.message()) + "\"; write fails: \"" +
             reason_of(refused.output) + "\"; previous file intact";
    };
    std::string report;
    if (root) {
      report = in_tmpfs(folder, size_t{16} << 20, [&] {
        return scenario(
            [&] { return ::mount(nullptr, folder.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr) == 0; });
      });
      if (report.rfind("skip:", 0) == 0) GTEST_SKIP() << "a read-only file system needs a tmpfs mount: " << report;
    } else {
      report = scenario([&] { return ::chmod(folder.c_str(), 0555) == 0; });
      ::chmod(folder.c_str(), 0755);
    }
    EXPECT_EQ(report.substr(0, 3), "ok:") << report;
    print_matrix(writer, root ? "read-only file system" : "read-only folder (0555)",
                 report.substr(std::min<size_t>(report.size(), 4)));
  }
}

// ---- kill -9 at random moments -----------------------------------------------------------------------------

TEST_F(WriterFaults, KillAtRandomMomentsAlwaysLeavesAWholeFile) {
  int kills = 4;
  if (const char* text = std::getenv("TRACKSCOPE_WRITER_FAULT_KILLS")) kills = std::max(1, std::atoi(text));
  std::mt19937 random(18);
  int total_mid_write = 0;
  for (const std::string& writer : writers_) {
    SCOPED_TRACE(writer);
    const fs::path folder = fresh_folder("kill_" + writer);
    const fs::path target = target_in(folder, writer);
    ASSERT_EQ(run_helper({"write", writer, target.string(), "1"}).exit_code, 0);
    int mid_write = 0;
    int64_t write_us = 0;
    for (int k = 0; k < kills; ++k) {
      // The helper's loop reports how long its first write took; the kill falls at a random moment of the
      // second one (which starts right after the report), so it interrupts a write rather than the start-up.
      const RunResult killed =
          run_helper({"loop", writer, target.string(), std::to_string(3 + 10 * k)}, {}, [&](const std::string& line) {
            long long version = 0;
            long long micros = 0;
            if (std::sscanf(line.c_str(), "wrote %lld in %lld", &version, &micros) != 2) micros = 1000;
            write_us = micros;
            std::uniform_int_distribution<int64_t> delay(0, std::max<int64_t>(1, micros));
            return std::chrono::microseconds(delay(random));
          });
      EXPECT_EQ(killed.signal, SIGKILL) << killed.describe();
      if (!strays(folder, target).empty()) ++mid_write;
      std::string why;
      const int64_t version = checked_version(writer, target, &why);
      EXPECT_GE(version, 3 + 10 * k) << "after kill " << k << ": " << why;
    }
    total_mid_write += mid_write;
    ASSERT_EQ(run_helper({"write", writer, target.string(), "2"}).exit_code, 0);
    if (writer != "settings") {
      EXPECT_EQ(strays(folder, target), std::vector<std::string>{});
    }
    print_matrix(writer, fmt::format("kill -9 x{}", kills),
                 fmt::format("whole file after every kill ({} left a temporary file: killed mid-write; one write "
                             "{:.0f} ms)",
                             mid_write, static_cast<double>(write_us) / 1000.0));
  }
  // Most kills fall while a temporary file is open; none at all would mean the test no longer hits writes.
  EXPECT_GT(total_mid_write, 0) << "no kill landed in the middle of a write";
}

}  // namespace
}  // namespace trackscope
