// Tests for the plain-line fast path: what it splits, serd (strict) reads as the same statement.
#include "loader/plain_statement.hpp"

#include <gtest/gtest.h>
#include <serd/serd.h>

#include <random>
#include <string>
#include <vector>

namespace glassbox::loader {
namespace {

// One serd node as text and type.
struct Node {
    SerdType type = SERD_NOTHING;
    std::string text;
    bool operator==(const Node&) const = default;
};

Node node_of(const SerdNode* node) {
    if (node == nullptr || node->type == SERD_NOTHING) return {};
    return {node->type, std::string(reinterpret_cast<const char*>(node->buf), node->n_bytes)};
}

// What serd (strict, as the reader sets it) makes of one line.
struct SerdLine {
    bool error = false;
    std::vector<std::array<Node, 6>> statements;  // s, p, o, datatype, language, graph
};

SerdLine serd_read(const std::string& line, bool quads) {
    SerdLine out;
    const auto on_statement = [](void* handle, SerdStatementFlags, const SerdNode* graph,
                                 const SerdNode* s, const SerdNode* p, const SerdNode* o,
                                 const SerdNode* datatype, const SerdNode* language) {
        static_cast<SerdLine*>(handle)->statements.push_back({node_of(s), node_of(p), node_of(o),
                                                              node_of(datatype), node_of(language),
                                                              node_of(graph)});
        return SERD_SUCCESS;
    };
    const auto on_error = [](void* handle, const SerdError*) {
        static_cast<SerdLine*>(handle)->error = true;
        return SERD_SUCCESS;
    };
    SerdReader* reader = serd_reader_new(quads ? SERD_NQUADS : SERD_NTRIPLES, &out, nullptr,
                                         nullptr, nullptr, on_statement, nullptr);
    serd_reader_set_strict(reader, true);
    serd_reader_set_error_sink(reader, on_error, &out);
    const SerdStatus st =
        serd_reader_read_string(reader, reinterpret_cast<const uint8_t*>(line.c_str()));
    if (st > SERD_FAILURE) out.error = true;
    serd_reader_free(reader);
    return out;
}

// The fast path's statement as serd's nodes would carry it.
std::array<Node, 6> as_nodes(const PlainStatement& plain) {
    const auto opt = [](std::string_view text, SerdType type) {
        return text.empty() ? Node{} : Node{type, std::string(text)};
    };
    return {Node{SERD_URI, std::string(plain.subject)},
            Node{SERD_URI, std::string(plain.predicate)},
            Node{plain.object_is_literal ? SERD_LITERAL : SERD_URI, std::string(plain.object)},
            opt(plain.datatype, SERD_URI),
            opt(plain.language, SERD_LITERAL),
            opt(plain.graph, SERD_URI)};
}

// Every line the fast path splits, serd reads without error as exactly that one statement.
void expect_serd_agrees(const std::string& line, bool quads) {
    const auto plain = split_plain_statement(line, quads);
    if (!plain) return;
    const auto serd = serd_read(line, quads);
    ASSERT_FALSE(serd.error) << "serd refuses a line the fast path took: " << line;
    ASSERT_EQ(serd.statements.size(), 1u) << line;
    EXPECT_EQ(serd.statements[0], as_nodes(*plain)) << line;
}

const std::vector<std::string> kPlain = {
    "<http://ex/s> <http://ex/p> <http://ex/o> .",
    "<http://ex/s> <http://ex/p> \"text\" .",
    "<http://ex/s> <http://ex/p> \"\" .",
    "<http://ex/s> <http://ex/p> \"Entity number 7\"@en .",
    "<http://ex/s> <http://ex/p> \"x\"@en-GB-oed .",
    "<http://ex/s> <http://ex/p> \"7\"^^<http://www.w3.org/2001/XMLSchema#integer> .",
    "  <urn:x:1>\t<http://ex/p>   <mailto:a@b.c>\t.  \r",
    "<http://ex/s> <http://ex/p> <http://ex/o>.",
    "<http://ex/s> <http://ex/p> \"x\"@en.",
    "<a+b-c.d:rest> <http://ex/p?q=1&r=%20#f> <http://ex/o;x=(1)*,!$'~[]> .",
    "<http://ex/s> <http://ex/p> \"a 'quoted' <thing> {x} | ^ ` done\" .",
};

TEST(PlainStatement, SplitsThePlainestLinesAsSerdReadsThem) {
    for (const auto& line : kPlain) {
        ASSERT_TRUE(split_plain_statement(line, false)) << line;
        expect_serd_agrees(line, false);
    }
    const auto plain = split_plain_statement(
        "<http://ex/s> <http://ex/p> \"7\"^^<http://ex/int> <http://ex/g> .", true);
    ASSERT_TRUE(plain);
    EXPECT_EQ(plain->object, "7");
    EXPECT_EQ(plain->datatype, "http://ex/int");
    EXPECT_EQ(plain->graph, "http://ex/g");
    expect_serd_agrees("<http://ex/s> <http://ex/p> \"7\"^^<http://ex/int> <http://ex/g> .", true);
    expect_serd_agrees("<http://ex/s> <http://ex/p> <http://ex/o> <http://ex/g>.", true);
}

TEST(PlainStatement, LeavesEverythingElseToSerd) {
    const std::vector<std::string> others = {
        "",
        "# a comment",
        "<http://ex/s> <http://ex/p> <http://ex/o> . # comment",
        "<http://ex/s> <http://ex/p> <http://ex/o> . <http://ex/s> <http://ex/p> <http://ex/o> .",
        "_:b1 <http://ex/p> <http://ex/o> .",
        "<http://ex/s> <http://ex/p> _:b1 .",
        "<http://ex/s> <http://ex/p> \"say \\\"hi\\\"\" .",
        "<http://ex/s> <http://ex/p> \"caf\xc3\xa9\" .",
        "<http://ex/caf\xc3\xa9> <http://ex/p> <http://ex/o> .",
        "<http://ex/\\u00E9> <http://ex/p> <http://ex/o> .",
        "<relative> <http://ex/p> <http://ex/o> .",
        "<1http://ex/s> <http://ex/p> <http://ex/o> .",
        "<http://ex/s> <http://ex/p> <http://ex/o>",
        "<http://ex/s> <http://ex/p> <http://ex/o> <http://ex/g> .",  // N-Triples: no graph
        "<http://ex/s><http://ex/p> <http://ex/o> .",
        "<http://ex/s> <http://ex/p> \"x\"@ .",
        "<http://ex/s> <http://ex/p> \"x\"@en- .",
        "<http://ex/s> <http://ex/p> \"x\"^<http://ex/t> .",
        "<http://ex/s> <http://ex/p> \"x\"^^<http://ex/t>@en .",
        "<http://ex/a b> <http://ex/p> <http://ex/o> .",
        "<http://ex/s> <http://ex/p> \"tab\there\" .",
        "<http://ex/s> <http://ex/p> \"\"\"long\"\"\" .",
        "<http://ex/s> <http://ex/p> <http://ex/o> .x",
    };
    for (const auto& line : others) {
        EXPECT_FALSE(split_plain_statement(line, false)) << line;
        expect_serd_agrees(line, true);
    }
}

// Lines made by changing plain ones at random: whatever the fast path still splits, serd reads
// as the same statement (it never takes a line serd refuses, nor reads one otherwise).
TEST(PlainStatement, MutatedLinesSplitOnlyAsSerdReadsThem) {
    std::mt19937 rng(7);
    const std::string alphabet = "<>\"@^_:. \t\\#{}|`-+1aZ\r\x7f\xc3";
    std::size_t split = 0;
    for (int round = 0; round < 20'000; ++round) {
        std::string line = kPlain[rng() % kPlain.size()];
        const int edits = 1 + static_cast<int>(rng() % 3);
        for (int e = 0; e < edits && !line.empty(); ++e) {
            const std::size_t at = rng() % line.size();
            const char c = alphabet[rng() % alphabet.size()];
            switch (rng() % 3) {
                case 0:
                    line[at] = c;
                    break;
                case 1:
                    line.insert(line.begin() + static_cast<std::ptrdiff_t>(at), c);
                    break;
                default:
                    line.erase(at, 1);
                    break;
            }
        }
        const bool quads = rng() % 2 == 0;
        if (split_plain_statement(line, quads)) ++split;
        expect_serd_agrees(line, quads);
        if (testing::Test::HasFatalFailure()) return;
    }
    EXPECT_GT(split, 1000u);  // the check above ran on many split lines
}

}  // namespace
}  // namespace glassbox::loader
