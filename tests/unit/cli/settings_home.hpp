// The settings tests' shared fixture: a home of the test's own (removed after it), the process's
// settings reset before and after, and an environment given as a map.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "cli/home.hpp"
#include "cli/settings.hpp"

namespace glassbox::cli::testing {

// An environment lookup over `vars` only (the process's own environment is not read).
inline config::EnvLookup env_of(std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
        const auto found = vars.find(name);
        if (found == vars.end()) return std::nullopt;
        return found->second;
    };
}

class SettingsHome : public ::testing::Test {
protected:
    void SetUp() override {
        home = std::filesystem::temp_directory_path() /
               ("glassbox-settings-test-" + std::to_string(std::random_device{}()));
        std::filesystem::create_directories(home / "run");
        reset_settings();
    }
    void TearDown() override {
        reset_settings();
        std::filesystem::remove_all(home);
    }
    void write_config(const std::string& text) { std::ofstream(config_file_path(home)) << text; }
    std::filesystem::path home;
};

}  // namespace glassbox::cli::testing
