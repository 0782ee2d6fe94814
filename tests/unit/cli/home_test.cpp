// Home resolution and <home>/config.json: precedence, defaults, invalid files, round trip.
#include "cli/home.hpp"

#include <cstdlib>
#include <fstream>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace glassbox::cli {
namespace {

namespace fs = std::filesystem;

// Sets an environment variable for one test and restores it after.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        if (value) ::setenv(name, value, 1);
        else ::unsetenv(name);
    }
    ~ScopedEnv() {
        if (old_) ::setenv(name_, old_->c_str(), 1);
        else ::unsetenv(name_);
    }

private:
    const char* name_;
    std::optional<std::string> old_;
};

class HomeTest : public ::testing::Test {
protected:
    void SetUp() override {
        home = fs::temp_directory_path() / ("glassbox-home-test-" + std::to_string(std::random_device{}()));
        fs::create_directories(home);
    }
    void TearDown() override { fs::remove_all(home); }
    void write(const std::string& text) { std::ofstream(home / "config.json") << text; }
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

TEST_F(HomeTest, MissingConfigMeansDefaults) {
    auto config = load_home_config(home);
    ASSERT_TRUE(config);
    EXPECT_FALSE(config->broker);
    EXPECT_FALSE(config->pub);
    EXPECT_EQ(resolve_broker_endpoint("", home).value(), "tcp://127.0.0.1:5555");
    EXPECT_EQ(resolve_pub_endpoint("", home).value(), "tcp://127.0.0.1:5556");
    EXPECT_EQ(resolve_broker_endpoint("tcp://10.0.0.1:1", home).value(), "tcp://10.0.0.1:1");
}

TEST_F(HomeTest, ConfigFileNamesTheBroker) {
    write(R"({"broker":"tcp://127.0.0.1:7000","pub":"tcp://127.0.0.1:7001","other":{"x":1}})");
    EXPECT_EQ(resolve_broker_endpoint("", home).value(), "tcp://127.0.0.1:7000");
    EXPECT_EQ(resolve_pub_endpoint("", home).value(), "tcp://127.0.0.1:7001");
    EXPECT_EQ(resolve_broker_endpoint("ipc:///tmp/x", home).value(), "ipc:///tmp/x") << "--broker wins";
}

TEST_F(HomeTest, InvalidConfigIsATypedError) {
    write("{not json");
    auto broken = resolve_broker_endpoint("", home);
    ASSERT_FALSE(broken);
    EXPECT_EQ(broken.error().type, base::ErrorType::kInvalidJson);
    EXPECT_TRUE(resolve_broker_endpoint("tcp://a:1", home)) << "an explicit endpoint needs no config";
    write("[1]");
    EXPECT_EQ(load_home_config(home).error().type, base::ErrorType::kDecodeError);
    write(R"({"broker": 5555})");
    EXPECT_EQ(load_home_config(home).error().type, base::ErrorType::kDecodeError);
    write(R"({"broker": ""})");
    EXPECT_EQ(load_home_config(home).error().type, base::ErrorType::kDecodeError);
}

TEST_F(HomeTest, WriteKeepsKeysItDoesNotKnow) {
    write(R"({"collector":{"db":"traces.db"},"broker":"tcp://old:1"})");
    ASSERT_TRUE(write_home_config(home, HomeConfig{"tcp://new:2", "tcp://new:3"}));
    auto config = load_home_config(home);
    ASSERT_TRUE(config);
    EXPECT_EQ(config->broker, "tcp://new:2");
    EXPECT_EQ(config->pub, "tcp://new:3");
    std::ifstream in(home / "config.json");
    const auto json = nlohmann::json::parse(in);
    EXPECT_EQ(json["collector"]["db"], "traces.db");
}

TEST_F(HomeTest, WriteCreatesTheHome) {
    const auto nested = home / "a" / "b";
    ASSERT_TRUE(save_home_config(nested, HomeConfig{"tcp://x:1", std::nullopt}));
    EXPECT_EQ(resolve_broker_endpoint("", nested).value(), "tcp://x:1");
    EXPECT_EQ(resolve_pub_endpoint("", nested).value(), "tcp://127.0.0.1:5556");
}

}  // namespace
}  // namespace glassbox::cli
