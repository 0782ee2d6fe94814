// Log lines: key=value fields of a message, a thread's fields on every line, JSON lines.
#include "base/log.hpp"

#include <thread>

#include <gtest/gtest.h>

namespace glassbox::base {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

// What one log call wrote on stderr.
std::string logged(const std::function<void()>& write) {
    ::testing::internal::CaptureStderr();
    write();
    spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& l) { l->flush(); });
    return ::testing::internal::GetCapturedStderr();
}

TEST(LogTest, MessageFieldsAreKeyValueWordsAndQuotedValues) {
    EXPECT_EQ(message_fields("event=bound endpoint=tcp://127.0.0.1:5555 pid=42"),
              (Fields{{"event", "bound"}, {"endpoint", "tcp://127.0.0.1:5555"}, {"pid", "42"}}));
    EXPECT_EQ(message_fields("event=failed error=\"no reply within 30 s\" attempt=2"),
              (Fields{{"event", "failed"}, {"error", "no reply within 30 s"}, {"attempt", "2"}}));
    EXPECT_EQ(message_fields("started, 3 workers: service=echo"), (Fields{{"service", "echo"}}));
    EXPECT_EQ(message_fields("error=\"unclosed and more"),
              (Fields{{"error", "unclosed and more"}}));
    EXPECT_EQ(message_fields("a= b=\"\""), (Fields{{"a", ""}, {"b", ""}}));
    EXPECT_TRUE(message_fields("=x 9=y").empty());
}

TEST(LogTest, FieldsNestAndLeaveWithTheirScope) {
    EXPECT_TRUE(log_fields().empty());
    {
        LogFields outer;
        outer.set("request", "r1");
        set_log_field("session", "s1");
        {
            LogFields inner;
            inner.set("step", "2");
            EXPECT_EQ(log_fields(), (Fields{{"request", "r1"}, {"session", "s1"}, {"step", "2"}}));
            set_log_field("request", "r2");  // replaces the outer one
        }
        EXPECT_EQ(log_fields(), (Fields{{"request", "r2"}, {"session", "s1"}}));
        std::thread([] {
            EXPECT_TRUE(log_fields().empty()) << "fields belong to their thread";
        }).join();
    }
    EXPECT_TRUE(log_fields().empty());
    set_log_field("lost", "x");  // no scope: nothing keeps it
    EXPECT_TRUE(log_fields().empty());
}

TEST(LogTest, HumanLinesCarryTheThreadsFieldsUnlessTheMessageNamesThem) {
    ASSERT_TRUE(set_log_format("human"));
    auto log = component_logger("log-test-human");
    LogFields fields;
    fields.set("request", "r-7");
    fields.set("session", "urn:trace:abc");
    const auto line = logged([&] { log->info("event=step"); });
    EXPECT_NE(line.find(" info log-test-human event=step request=r-7 session=urn:trace:abc\n"),
              std::string::npos)
        << line;
    const auto own = logged([&] { log->info("event=step request=mine"); });
    EXPECT_NE(own.find("event=step request=mine session=urn:trace:abc\n"), std::string::npos)
        << own;
}

TEST(LogTest, JsonLinesHaveTheFixedMembersAndTheFields) {
    ASSERT_TRUE(set_log_format("json"));
    auto log = component_logger("log-test-json");
    LogFields fields;
    fields.set("request", "r-8");
    const auto line =
        logged([&] { log->warn("event=slow \"quoted\" error=\"a\\b\" service=echo"); });
    ASSERT_TRUE(set_log_format("human"));
    ASSERT_FALSE(line.empty());
    EXPECT_EQ(line.back(), '\n');
    EXPECT_EQ(line.rfind("{\"time\":\"", 0), 0u) << line;
    EXPECT_NE(line.find("Z\",\"level\":\"warn\",\"component\":\"log-test-json\","
                        "\"msg\":\"event=slow \\\"quoted\\\" error=\\\"a\\\\b\\\" service=echo\""),
              std::string::npos)
        << line;
    EXPECT_NE(
        line.find(
            ",\"event\":\"slow\",\"error\":\"a\\\\b\",\"service\":\"echo\",\"request\":\"r-8\"}"),
        std::string::npos)
        << line;
    EXPECT_FALSE(set_log_format("xml"));
}

TEST(LogTest, JsonLinesStayValidForAnyBytes) {
    ASSERT_TRUE(set_log_format("json"));
    auto log = component_logger("log-test-bytes");
    const auto line = logged([&] { log->info("bad=\xff\x01 tab=\"a\tb\""); });
    ASSERT_TRUE(set_log_format("human"));
    EXPECT_NE(line.find("\"bad\":\"\\\\xFF\\\\x01\""), std::string::npos) << line;
    EXPECT_NE(line.find("\"tab\":\"a\\tb\""), std::string::npos) << line;
}

}  // namespace
}  // namespace glassbox::base
