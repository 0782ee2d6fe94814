// The home's files and folders: owner-only as docs/operations.md says, an existing home never
// chmodded (one others can write is refused), and links inside it refused, their targets untouched.
#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "tests/support/cluster.hpp"

namespace glassbox::integration {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

unsigned mode_of(const fs::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return 0;
    return st.st_mode & 07777;
}

class HomeFilesTest : public ClusterTest {
protected:
    std::vector<std::string> up_args(const fs::path& home) {
        return {glassbox_binary(),
                "up",
                "--home",
                home.string(),
                "--bind",
                "tcp://127.0.0.1:*",
                "--pub",
                "tcp://127.0.0.1:*",
                "--heartbeat-ms",
                std::to_string(kHeartbeatMs),
                "--gateway-listen",
                "127.0.0.1:0",
                "--ready-file",
                (dir() / "up.ready").string()};
    }
    // `glassbox up` that must refuse to start: exit 2 at once, with `expected` on stderr.
    void expect_up_refused(const fs::path& home, const std::string& expected) {
        auto args = up_args(home);
        args.erase(args.begin());
        const auto r = run_glassbox(args, 10'000ms);
        EXPECT_FALSE(r.timed_out) << "glassbox up started instead of refusing";
        EXPECT_EQ(r.status.code, 2) << r.status.describe() << "\n" << r.err;
        EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    }
    static std::string text_of(const fs::path& path) { return read_file(path); }
};

TEST_F(HomeFilesTest, UpCreatesEveryFileAndFolderOwnerOnly) {
    const auto home = dir() / "new-home";
    auto& up = start_process("up", up_args(home));
    const auto ready = wait_for_ready_file(dir() / "up.ready", up, 20'000ms);
    ASSERT_TRUE(ready) << up.stderr_text();
    const std::string endpoint = (*ready)["endpoint"].get<std::string>();
    use_curve_for(endpoint, home_curve_keys(home.string()));
    ASSERT_TRUE(wait_for_service(endpoint, "store"));
    ASSERT_TRUE(wait_for_service(endpoint, "embeddings"));
    ASSERT_TRUE(wait_for_service(endpoint, "trace"));
    const auto data = dir() / "small.nt";
    std::ofstream(data) << "<urn:a> <urn:knows> <urn:b> .\n"
                           "<urn:a> <http://www.w3.org/2000/01/rdf-schema#label> \"Alice\" .\n"
                           "<urn:b> <http://www.w3.org/2000/01/rdf-schema#label> \"Bob\" .\n";
    const auto loaded =
        run_glassbox({"load", "rdf", data.string(), "--home", home.string()}, 60'000ms);
    ASSERT_EQ(loaded.status.code, 0) << loaded.err;
    const auto traced =
        run_glassbox({"call", "echo", echo_body("a trace"), "--home", home.string()});
    ASSERT_EQ(traced.status.code, 0) << traced.err;
    up.send_signal(SIGTERM);
    ASSERT_TRUE(up.wait_exit(20'000ms));

    // Everything under the home: folders 0700, files 0600 (docs/operations.md, "The home folder").
    std::set<std::string> seen;
    EXPECT_EQ(mode_of(home), 0700u);
    for (const auto& entry : fs::recursive_directory_iterator(home)) {
        const auto relative = fs::relative(entry.path(), home).string();
        seen.insert(relative);
        if (entry.is_symlink()) {
            ADD_FAILURE() << relative << " is a symbolic link";
        } else if (entry.is_directory()) {
            EXPECT_EQ(mode_of(entry.path()), 0700u) << relative;
        } else {
            EXPECT_EQ(mode_of(entry.path()), 0600u) << relative;
        }
    }
    for (const char* expected :
         {"run/endpoints.json", "logs", "logs/broker.log", "logs/store.log", "run",
          "run/broker.ready", "knowledge", "knowledge/default.db", "knowledge/default.entity.hnsw",
          "traces.db", "keys", "keys/broker.key_secret", "keys/client.key_secret",
          "keys/worker.key_secret", "keys/collector.key_secret", "keys/allowed",
          "keys/allowed/client.key", "keys/allowed/worker.key", "keys/allowed/collector.key"}) {
        EXPECT_TRUE(seen.contains(expected)) << expected << " was not created";
    }
    EXPECT_EQ(mode_of(dir() / "up.ready"), 0600u) << "--ready-file";
}

TEST_F(HomeFilesTest, AHomeOthersCanWriteIsRefusedAndLeftAsItWas) {
    const auto shared = dir() / "shared";
    fs::create_directory(shared);
    ::chmod(shared.c_str(), 01777);  // as /tmp
    expect_up_refused(shared, "other users can write");
    EXPECT_EQ(mode_of(shared), 01777u) << "never chmodded";
    EXPECT_TRUE(fs::is_empty(shared)) << "nothing created in a refused home";

    const auto broker = run_glassbox({"broker", "--home", shared.string(), "--bind",
                                      "tcp://127.0.0.1:*", "--pub", "tcp://127.0.0.1:*"},
                                     10'000ms);
    EXPECT_FALSE(broker.timed_out) << "the broker started in a shared home";
    EXPECT_EQ(broker.status.code, 2) << broker.err;
    EXPECT_EQ(mode_of(shared), 01777u);

    // An existing home of the user's that others may read is used as it is.
    const auto readable = dir() / "readable";
    fs::create_directory(readable);
    ::chmod(readable.c_str(), 0755);
    auto& up = start_process("up", up_args(readable));
    ASSERT_TRUE(wait_for_ready_file(dir() / "up.ready", up, 20'000ms)) << up.stderr_text();
    EXPECT_EQ(mode_of(readable), 0755u) << "an existing home keeps its mode";
    EXPECT_EQ(mode_of(readable / "logs"), 0700u);
}

TEST_F(HomeFilesTest, ALinkedLogFileIsRefusedAndItsTargetUntouched) {
    const auto home = dir() / "home";
    fs::create_directories(home / "logs");
    ::chmod(home.c_str(), 0700);
    ::chmod((home / "logs").c_str(), 0700);
    const auto target = dir() / "precious.txt";
    std::ofstream(target) << "precious";
    ::chmod(target.c_str(), 0644);
    fs::create_symlink(target, home / "logs" / "broker.log");
    expect_up_refused(home, "symbolic link");
    EXPECT_EQ(text_of(target), "precious");
    EXPECT_EQ(mode_of(target), 0644u);

    // A linked logs/ folder is refused the same way.
    fs::remove_all(home / "logs");
    const auto elsewhere = dir() / "elsewhere";
    fs::create_directory(elsewhere);
    ::chmod(elsewhere.c_str(), 0755);
    fs::create_directory_symlink(elsewhere, home / "logs");
    expect_up_refused(home, "symbolic link");
    EXPECT_EQ(mode_of(elsewhere), 0755u);
    EXPECT_TRUE(fs::is_empty(elsewhere));
}

TEST_F(HomeFilesTest, ALinkedKnowledgeFolderIsRefusedAndItsTargetUntouched) {
    const auto home = dir() / "home";
    fs::create_directory(home);
    ::chmod(home.c_str(), 0700);
    const auto elsewhere = dir() / "elsewhere";
    fs::create_directory(elsewhere);
    ::chmod(elsewhere.c_str(), 0755);
    fs::create_directory_symlink(elsewhere, home / "knowledge");
    const auto store = run_glassbox(
        {"worker", "store", "--home", home.string(), "--broker", "tcp://127.0.0.1:1"}, 10'000ms);
    EXPECT_FALSE(store.timed_out) << "the store worker started on a linked knowledge/";
    EXPECT_EQ(store.status.code, 2) << store.err;
    EXPECT_NE(store.err.find("symbolic link"), std::string::npos) << store.err;
    EXPECT_EQ(mode_of(elsewhere), 0755u);
    EXPECT_TRUE(fs::is_empty(elsewhere));
}

}  // namespace
}  // namespace glassbox::integration
