// What the glassbox executables link and load: the broker, workers and CLI commands must not pay
// for the HTTP libraries at start (cli/gateway_launcher.cpp, http/curl_library.hpp), and
// `glassbox gateway` must still reach the gateway program, or say clearly why not.
#include <unistd.h>

#include <filesystem>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/process.hpp"

namespace glassbox::integration {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

// The shared libraries an executable names (readelf -d, the DT_NEEDED entries), without versions.
std::set<std::string> needed_libraries(const fs::path& executable, const fs::path& log_dir) {
    const auto r =
        run_command({"/usr/bin/readelf", "-d", executable.string()}, log_dir, milliseconds{20'000});
    EXPECT_TRUE(r.status.exited && r.status.code == 0) << r.err;
    std::set<std::string> names;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
        if (line.find("(NEEDED)") == std::string::npos) continue;
        const auto open = line.find('[');
        const auto close = line.find(']', open);
        if (open == std::string::npos || close == std::string::npos) continue;
        std::string name = line.substr(open + 1, close - open - 1);
        name = name.substr(0, name.find(".so"));
        names.insert(name);
    }
    return names;
}

TEST(ExecutablesTest, GlassboxLinksNoHttpLibraryAndTheGatewayProgramDoes) {
    TempDir tmp("glassbox-exe");
    const fs::path glassbox = GLASSBOX_BINARY;
    const auto linked = needed_libraries(glassbox, tmp.path());
    ASSERT_TRUE(linked.count("libzmq")) << "readelf found no NEEDED entries of " << glassbox;
    for (const char* library :
         {"libcurl", "libcurl-gnutls", "libcpp-httplib", "libssl", "libcrypto"}) {
        EXPECT_EQ(linked.count(library), 0u) << glassbox << " links " << library;
    }
    const auto gateway = needed_libraries(glassbox.parent_path() / "glassbox-gateway", tmp.path());
    EXPECT_EQ(gateway.count("libcpp-httplib"), 1u)
        << "glassbox-gateway is not beside glassbox, or not the gateway";
}

TEST(ExecutablesTest, GlassboxGatewayHelpIsTheGatewayProgramsHelp) {
    TempDir tmp("glassbox-exe");
    const auto r =
        run_command({GLASSBOX_BINARY, "gateway", "--help"}, tmp.path(), milliseconds{20'000});
    ASSERT_TRUE(r.status.exited) << r.status.describe();
    EXPECT_EQ(r.status.code, 0) << r.err;
    // Options only the gateway program's own `gateway` command has.
    EXPECT_NE(r.out.find("--listen"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--mcp-allow-origin"), std::string::npos) << r.out;
}

TEST(ExecutablesTest, GlassboxGatewayWithoutTheGatewayProgramSaysWhereItLooked) {
    TempDir tmp("glassbox-exe");
    // A copy (not a link: the launcher looks beside the real file) alone in a folder.
    const fs::path lonely = tmp.path() / "bin" / "glassbox";
    fs::create_directories(lonely.parent_path());
    fs::copy_file(GLASSBOX_BINARY, lonely);
    const auto r = run_command({lonely.string(), "gateway", "--listen", "127.0.0.1:0", "--home",
                                (tmp.path() / "home").string()},
                               tmp.path(), milliseconds{20'000});
    ASSERT_TRUE(r.status.exited) << r.status.describe();
    EXPECT_EQ(r.status.code, 2) << r.err;
    EXPECT_NE(r.err.find("NotFound"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find((lonely.parent_path() / "glassbox-gateway").string()), std::string::npos)
        << r.err;
}

}  // namespace
}  // namespace glassbox::integration
