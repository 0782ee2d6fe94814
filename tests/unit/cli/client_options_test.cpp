// CLI error mapping: which typed errors exit 2 (bad input, not found) and which exit 1.
#include "cli/client_options.hpp"

#include "cli/settings.hpp"

#include <gtest/gtest.h>

namespace glassbox::cli {
namespace {

using base::ErrorType;

TEST(ClientOptionsTest, ExitCodes) {
    for (auto type :
         {ErrorType::kInvalidRequest, ErrorType::kInvalidJson, ErrorType::kDecodeError,
          ErrorType::kNotFound, ErrorType::kUnknownService, ErrorType::kMessageTooLarge}) {
        EXPECT_EQ(exit_code_for(type), 2) << base::to_string(type);
    }
    for (auto type :
         {ErrorType::kDeadlineExceeded, ErrorType::kWorkerLost, ErrorType::kTimeout,
          ErrorType::kInternal, ErrorType::kBrokerRestarted, ErrorType::kServiceUnavailable}) {
        EXPECT_EQ(exit_code_for(type), 1) << base::to_string(type);
    }
}

TEST(ClientOptionsTest, ErrorExitPrintsOneLineAndCarriesTheCode) {
    ::testing::internal::CaptureStderr();
    try {
        exit_with_error(base::make_error(ErrorType::kNotFound, "no trace\nsecond line"));
        FAIL() << "exit_with_error returned";
    } catch (const CLI::RuntimeError& e) {
        EXPECT_EQ(e.get_exit_code(), 2);
    }
    const auto err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(err, "NotFound: no trace second line\n");
}

TEST(ClientOptionsTest, SharedOptionsParse) {
    reset_settings();
    CLI::App app;
    ClientOptions options;
    add_client_options(app, options, 1234, ClientOptionSet{.pub = true});
    EXPECT_EQ(options.timeout_ms, 1234);
    app.parse("--timeout-ms 99 --json --home /nonexistent/h --broker tcp://b:1", false);
    resolve_settings(app);
    EXPECT_TRUE(options.json);
    EXPECT_EQ(options.timeout_ms, 99);
    EXPECT_EQ(options.home_path(), std::filesystem::path("/nonexistent/h"));
    EXPECT_EQ(options.broker_endpoint(), "tcp://b:1");
    EXPECT_EQ(options.pub_endpoint(), "tcp://127.0.0.1:5556") << "the default";
    reset_settings();
}

}  // namespace
}  // namespace glassbox::cli
