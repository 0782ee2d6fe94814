// "Did you mean": the first word that stands where a subcommand goes and names none, found past
// options and their values, with the nearest subcommand of that level (issue 31).
#include <gtest/gtest.h>

#include <vector>

#include "cli/command_typos.hpp"

namespace glassbox::cli {
namespace {

struct Tree {
    CLI::App app{"test"};
    std::string broker;
    std::string question;
    Tree() {
        app.add_option("--broker", broker);
        auto* traces = app.add_subcommand("traces");
        traces->add_subcommand("list");
        traces->add_subcommand("show")->allow_extras();
        auto* invoke = app.add_subcommand("invoke");
        invoke->add_option("-q,--question", question);
        invoke->add_flag("-x");
        invoke->add_subcommand("graph-rag");
        invoke->add_subcommand("document-rag");
    }
    std::optional<std::string> typo(std::vector<const char*> words) {
        words.insert(words.begin(), "glassbox");
        return unknown_command_message(app, static_cast<int>(words.size()), words.data());
    }
};

TEST(CommandTypos, NamesTheNearestCommandOfTheLevelTheWordStandsAt) {
    Tree t;
    EXPECT_EQ(t.typo({"invok"}),
              std::optional<std::string>(
                  "unknown command \"invok\" (did you mean invoke?); the commands are: "
                  "traces, invoke"));
    EXPECT_NE(t.typo({"trace", "list"}).value_or("").find("\"trace\" (did you mean traces?)"),
              std::string::npos);
    EXPECT_NE(t.typo({"traces", "lst"})
                  .value_or("")
                  .find("unknown traces command \"lst\" (did you mean list?)"),
              std::string::npos);
    // Past an option's value (which is no command) and a flag.
    EXPECT_NE(t.typo({"--broker", "tcp://x:1", "invoke", "-x", "-q", "hi there", "graphrag"})
                  .value_or("(none)")
                  .find("\"graphrag\" (did you mean graph-rag?)"),
              std::string::npos)
        << t.typo({"--broker", "tcp://x:1", "invoke", "-x", "-q", "hi there", "graphrag"})
               .value_or("(none)");
    // Nothing near: the commands are still listed.
    EXPECT_EQ(t.typo({"zzzzzzzz"}).value_or(""),
              "unknown command \"zzzzzzzz\"; the commands are: traces, invoke");
}

TEST(CommandTypos, WordsWhereNoSubcommandGoesAreNoTypos) {
    Tree t;
    // A command without subcommands takes its own words; "--" ends the options.
    EXPECT_FALSE(t.typo({"traces", "show", "2e14c8b4"}));
    EXPECT_FALSE(t.typo({"invoke", "-q", "graphrag"}));
    EXPECT_FALSE(t.typo({"invoke", "--question=graphrag"}));
    EXPECT_FALSE(t.typo({"--", "invok"}));
    EXPECT_FALSE(t.typo({}));
}

}  // namespace
}  // namespace glassbox::cli
