// Home resolution and the runtime state in <home>/run/endpoints.json: round trip, invalid files.
#include "cli/home.hpp"

#include <cstdlib>
#include <fstream>
#include <random>

#include <gtest/gtest.h>
#include "cli/settings.hpp"

namespace glassbox::cli {
namespace {

namespace fs = std::filesystem;

// Sets an environment variable for one test and restores it after.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        if (value)
            ::setenv(name, value, 1);
        else
            ::unsetenv(name);
    }
    ~ScopedEnv() {
        if (old_)
            ::setenv(name_, old_->c_str(), 1);
        else
            ::unsetenv(name_);
    }

private:
    const char* name_;
    std::optional<std::string> old_;
};

class HomeTest : public ::testing::Test {
protected:
    void SetUp() override {
        home = fs::temp_directory_path() /
               ("glassbox-home-test-" + std::to_string(std::random_device{}()));
        fs::create_directories(home);
    }
    void TearDown() override { fs::remove_all(home); }
    fs::path home;
};

TEST_F(HomeTest, CliThenEnvThenHomeDirectory) {
    ScopedEnv env("GLASSBOX_HOME", "/from/env");
    ScopedEnv user("HOME", "/home/someone");
    EXPECT_EQ(resolve_home("/from/cli"), fs::path("/from/cli"));
    EXPECT_EQ(resolve_home(""), fs::path("/from/env"));
    ScopedEnv no_env("GLASSBOX_HOME", nullptr);
    EXPECT_EQ(resolve_home(""), fs::path("/home/someone/.glassbox"));
    ScopedEnv empty_env("GLASSBOX_HOME", "");
    EXPECT_EQ(resolve_home(""), fs::path("/home/someone/.glassbox"));
}

TEST_F(HomeTest, NoStateIsAnEmptyLayer) {
    auto state = load_endpoints_state(home);
    ASSERT_TRUE(state);
    EXPECT_TRUE(state->entries.empty());
}

TEST_F(HomeTest, StateRoundTripsAsSettingsWithTheirOrigin) {
    const auto nested = home / "a" / "b";
    ASSERT_TRUE(save_endpoints_state(
        nested, BoundEndpoints{"tcp://127.0.0.1:7000", "tcp://127.0.0.1:7001"}));
    EXPECT_EQ(fs::status(endpoints_state_path(nested)).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write);
    EXPECT_EQ(fs::status(nested / "run").permissions() & fs::perms::all, fs::perms::owner_all);
    auto state = load_endpoints_state(nested);
    ASSERT_TRUE(state) << state.error().message;
    ASSERT_EQ(state->entries.size(), 2u) << "pid is not a setting";
    for (const auto& entry : state->entries) {
        EXPECT_EQ(entry.origin.describe(), "state " + endpoints_state_path(nested).string());
        EXPECT_EQ(std::get<std::string>(entry.value),
                  entry.key == "broker.endpoint" ? "tcp://127.0.0.1:7000" : "tcp://127.0.0.1:7001");
    }
}

TEST_F(HomeTest, InvalidStateIsAnErrorNamingTheFile) {
    fs::create_directories(home / "run");
    const auto write = [this](const std::string& text) {
        std::ofstream(endpoints_state_path(home)) << text;
    };
    for (const char* text : {"{not json", "[1]", R"({"broker.endpoint": 5555})"}) {
        write(text);
        auto state = load_endpoints_state(home);
        ASSERT_FALSE(state) << text;
        EXPECT_EQ(state.error().type, base::ErrorType::kInvalidRequest);
        EXPECT_NE(state.error().message.find(endpoints_state_path(home).string()),
                  std::string::npos);
    }
    write(R"({"broker.heartbeat_ms": "fast"})");
    auto state = load_endpoints_state(home);
    ASSERT_FALSE(state);
    EXPECT_NE(state.error().message.find("broker.heartbeat_ms: expected an integer"),
              std::string::npos);
}

}  // namespace
}  // namespace glassbox::cli
