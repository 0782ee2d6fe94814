// Prompt templates: the built-in set, parsing, rendering and variable checks, folder overrides.
#include "workers/llm/prompt_template.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

namespace glassbox::llm {
namespace {

using base::ErrorType;
using nlohmann::json;

// A fresh folder removed after the test.
class TempDir {
public:
    TempDir() {
        path_ = std::filesystem::temp_directory_path() /
                ("glassbox-llm-templates-" + std::to_string(::getpid()) + "-" +
                 std::to_string(std::random_device{}()));
        std::filesystem::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    const std::filesystem::path& path() const { return path_; }
    void write(const std::string& name, const std::string& text) const {
        std::ofstream(path_ / name) << text;
    }

private:
    std::filesystem::path path_;
};

TEST(PromptTemplateTest, TheBuiltInSetHasTheContractAndAgentTemplates) {
    auto set = TemplateSet::builtin();
    ASSERT_TRUE(set) << set.error().describe();
    EXPECT_EQ(set->names(),
              (std::vector<std::string>{"agent-completion", "agent-react", "document-synthesis",
                                        "extract-concepts", "kg-edge-reasoning", "kg-edge-scoring",
                                        "kg-synthesis", "relevance-judge", "rephrase-query"}));
    const auto* concepts = set->find("extract-concepts");
    ASSERT_NE(concepts, nullptr);
    EXPECT_EQ(concepts->output, OutputKind::kJson);
    EXPECT_EQ(concepts->schema["properties"]["concepts"]["maxItems"], 10);
    ASSERT_NE(concepts->variable("question"), nullptr);
    EXPECT_FALSE(concepts->variable("question")->json);
    const auto* scoring = set->find("kg-edge-scoring");
    ASSERT_NE(scoring, nullptr);
    ASSERT_NE(scoring->variable("edges"), nullptr);
    EXPECT_TRUE(scoring->variable("edges")->json);
    EXPECT_TRUE(scoring->variable("concepts")->json);
    EXPECT_EQ(set->find("kg-synthesis")->output, OutputKind::kText);
    EXPECT_EQ(set->find("document-synthesis")->output, OutputKind::kText);
    EXPECT_EQ(set->find("no-such-template"), nullptr);
}

TEST(PromptTemplateTest, RendersPlaceholdersWithTheVariables) {
    auto t = PromptTemplate::parse("t",
                                   "output: text\n---\nQ: {{question}} / {{ question }} / "
                                   "{{other}}\n{{not a placeholder}} {x}",
                                   "test");
    ASSERT_TRUE(t) << t.error().describe();
    ASSERT_EQ(t->variables.size(), 2u) << "undeclared placeholders are text variables";
    auto rendered = t->render({{"question", "why?"}, {"other", "{{question}}"}, {"unused", "x"}});
    ASSERT_TRUE(rendered) << rendered.error().describe();
    EXPECT_EQ(rendered->text, "Q: why? / why? / {{question}}\n{{not a placeholder}} {x}")
        << "values are inserted verbatim, never expanded again";
}

TEST(PromptTemplateTest, AMissingVariableIsNamed) {
    auto set = TemplateSet::builtin();
    ASSERT_TRUE(set);
    auto rendered = set->find("kg-synthesis")->render({{"question", "q"}});
    ASSERT_FALSE(rendered);
    EXPECT_EQ(rendered.error().type, ErrorType::kInvalidRequest);
    EXPECT_NE(rendered.error().message.find("\"edges\""), std::string::npos)
        << rendered.error().message;
}

TEST(PromptTemplateTest, JsonVariablesMustParseAndHaveTheDeclaredShape) {
    auto set = TemplateSet::builtin();
    ASSERT_TRUE(set);
    const auto* t = set->find("kg-edge-scoring");
    auto bad_json = t->render({{"question", "q"}, {"concepts", "[]"}, {"edges", "[{\"id\": "}});
    ASSERT_FALSE(bad_json);
    EXPECT_EQ(bad_json.error().type, ErrorType::kInvalidRequest);
    EXPECT_NE(bad_json.error().message.find("\"edges\""), std::string::npos);
    EXPECT_NE(bad_json.error().message.find("JSON"), std::string::npos);

    auto bad_shape = t->render(
        {{"question", "q"}, {"concepts", "[]"}, {"edges", R"([{"id": "e1", "s": "a"}])"}});
    ASSERT_FALSE(bad_shape);
    EXPECT_NE(bad_shape.error().message.find("\"edges\""), std::string::npos);
    EXPECT_NE(bad_shape.error().message.find("$[0]: missing required property \"p\""),
              std::string::npos)
        << bad_shape.error().message;

    auto bad_concepts =
        t->render({{"question", "q"}, {"concepts", R"(["a", 1])"}, {"edges", "[]"}});
    ASSERT_FALSE(bad_concepts);
    EXPECT_NE(bad_concepts.error().message.find("\"concepts\""), std::string::npos);

    const std::string edges =
        R"([{"id": "e1", "s": "Cruz Azul FC", "p": "is in country", "o": "Mexico"}])";
    auto good = t->render({{"question", "Where is Cruz Azul FC?"},
                           {"concepts", R"(["Cruz Azul FC"])"},
                           {"edges", edges}});
    ASSERT_TRUE(good) << good.error().describe();
    EXPECT_NE(good->text.find(edges), std::string::npos);
    EXPECT_NE(good->text.find("Where is Cruz Azul FC?"), std::string::npos);
    EXPECT_EQ(good->json_variables.at("edges")[0]["o"], "Mexico");
}

TEST(PromptTemplateTest, AcceptsWindowsLineEndsAndAByteOrderMark) {
    auto t = PromptTemplate::parse(
        "t", "\xEF\xBB\xBF# made on Windows\r\noutput: text\r\n---\r\nQ: {{question}}\r\n",
        "t.txt");
    ASSERT_TRUE(t) << t.error().describe();
    auto rendered = t->render({{"question", "why"}});
    ASSERT_TRUE(rendered);
    EXPECT_EQ(rendered->text, "Q: why\r\n");
}

TEST(PromptTemplateTest, MalformedTemplatesAreRefusedWithFileAndLine) {
    const auto error_of = [](const char* text) {
        auto t = PromptTemplate::parse("x", text, "x.txt");
        return t ? std::string("<parsed>") : t.error().message;
    };
    EXPECT_NE(error_of("output: text\nQ: {{question}}").find("no \"---\""), std::string::npos);
    EXPECT_NE(error_of("---\nQ").find("no \"output:\""), std::string::npos);
    EXPECT_NE(error_of("output: xml\n---\n").find("x.txt:1"), std::string::npos);
    EXPECT_NE(error_of("# c\noutput: json\n---\n").find("needs a \"schema:\""), std::string::npos);
    EXPECT_NE(error_of("output: json\nschema: {\"type\": \"float\"}\n---\n").find("x.txt:2"),
              std::string::npos);
    EXPECT_NE(error_of("output: json\nschema: {not json\n---\n").find("not valid JSON"),
              std::string::npos);
    EXPECT_NE(error_of("output: text\ncolour: red\n---\n").find("unknown header key \"colour\""),
              std::string::npos);
    EXPECT_NE(error_of("output: text\nvariable q: number\n---\n").find("variable \"q\""),
              std::string::npos);
    EXPECT_NE(
        error_of("output: text\nvariable q: text\nvariable q: text\n---\n").find("declared twice"),
        std::string::npos);
    EXPECT_NE(error_of("  indented first\noutput: text\n---\n").find("continuation"),
              std::string::npos);
}

TEST(PromptTemplateTest, AFolderOverridesByFileNameAndAddsTemplates) {
    TempDir dir;
    dir.write("kg-synthesis.txt",
              "output: text\nvariable edges: json\n---\nMine: {{question}} {{edges}}");
    dir.write("haiku.txt", "output: text\n---\nA haiku about {{topic}}");
    dir.write("notes.md", "not a template: ignored");
    auto set = TemplateSet::load(dir.path());
    ASSERT_TRUE(set) << set.error().describe();
    EXPECT_EQ(set->names().size(), 10u);  // the nine built-in ones and haiku
    const auto* synthesis = set->find("kg-synthesis");
    ASSERT_NE(synthesis, nullptr);
    EXPECT_EQ(synthesis->origin, (dir.path() / "kg-synthesis.txt").string());
    auto rendered = synthesis->render({{"question", "q"}, {"edges", "[]"}});
    ASSERT_TRUE(rendered);
    EXPECT_EQ(rendered->text, "Mine: q []");
    EXPECT_EQ(set->find("extract-concepts")->origin, "built-in extract-concepts")
        << "others stay built in";
    ASSERT_NE(set->find("haiku"), nullptr);
    EXPECT_EQ(set->find("haiku")->variables.front().name, "topic");
}

TEST(PromptTemplateTest, ABadFolderOrFileIsAnError) {
    auto missing = TemplateSet::load("/nonexistent/glassbox/templates");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().type, ErrorType::kNotFound);

    TempDir dir;
    dir.write("broken.txt", "output: text\nno separator");
    auto broken = TemplateSet::load(dir.path());
    ASSERT_FALSE(broken);
    EXPECT_EQ(broken.error().type, ErrorType::kInvalidRequest);
    EXPECT_NE(broken.error().message.find("broken.txt"), std::string::npos);

    TempDir upper;
    upper.write("Upper Case.txt", "output: text\n---\n");
    auto named = TemplateSet::load(upper.path());
    ASSERT_FALSE(named);
    EXPECT_NE(named.error().message.find("template name"), std::string::npos);
}

}  // namespace
}  // namespace glassbox::llm
