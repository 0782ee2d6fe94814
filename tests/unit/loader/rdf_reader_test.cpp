// Tests for the RDF reader (serd): formats, terms, batches, errors, lenient recovery, N-Quads.
#include "loader/rdf_reader.hpp"

#include <gtest/gtest.h>

#include "base/utf8.hpp"

#include <atomic>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace glassbox::loader {
namespace {

namespace fs = std::filesystem;
using schema::Triple;

constexpr std::string_view kEx = "http://ex/";

std::string ex(std::string_view local) { return std::string(kEx) + std::string(local); }

// A unique temporary folder, removed with its files.
class TempDir {
public:
    TempDir() {
        static std::atomic<int> counter{0};
        const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
        path_ = fs::temp_directory_path() /
                ("glassbox_rdf_" + std::to_string(stamp) + "_" + std::to_string(counter++));
        fs::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    fs::path write(const std::string& name, std::string_view content) const {
        const fs::path file = path_ / name;
        std::ofstream out(file, std::ios::binary);
        out << content;
        return file;
    }
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

struct ReadAll {
    base::Result<RdfReadStats> stats = RdfReadStats{};
    std::vector<Triple> triples;
    std::vector<std::size_t> batch_sizes;
    std::vector<RdfIssue> issues;
};

ReadAll read_all(const fs::path& file, RdfReadOptions options = {}) {
    ReadAll all;
    all.stats = read_rdf(
        file, options,
        [&](std::span<const Triple> batch) {
            all.batch_sizes.push_back(batch.size());
            all.triples.insert(all.triples.end(), batch.begin(), batch.end());
            return base::Result<void>{};
        },
        [&](const RdfIssue& issue) { all.issues.push_back(issue); });
    return all;
}

bool contains(const std::vector<Triple>& triples, const Triple& wanted) {
    return std::find(triples.begin(), triples.end(), wanted) != triples.end();
}

// Counts lines that hold a statement (not blank, not a comment) the way a person would.
std::uint64_t count_statement_lines(const fs::path& file) {
    std::ifstream in(file);
    std::string line;
    std::uint64_t n = 0;
    while (std::getline(in, line)) {
        const auto first = line.find_first_not_of(" \t\r");
        if (first != std::string::npos && line[first] != '#') ++n;
    }
    return n;
}

TEST(RdfFormat, NamesAndExtensions) {
    EXPECT_EQ(*format_from_name("nt"), RdfFormat::kNTriples);
    EXPECT_EQ(*format_from_name("NTriples"), RdfFormat::kNTriples);
    EXPECT_EQ(*format_from_name("nq"), RdfFormat::kNQuads);
    EXPECT_EQ(*format_from_name("nquads"), RdfFormat::kNQuads);
    EXPECT_EQ(*format_from_name("ttl"), RdfFormat::kTurtle);
    EXPECT_EQ(*format_from_name("turtle"), RdfFormat::kTurtle);
    EXPECT_EQ(*format_from_name("trig"), RdfFormat::kTriG);
    EXPECT_EQ(*format_from_path("a/b.NT"), RdfFormat::kNTriples);
    EXPECT_EQ(*format_from_path("x.nq"), RdfFormat::kNQuads);
    EXPECT_EQ(*format_from_path("x.ttl"), RdfFormat::kTurtle);
    EXPECT_EQ(*format_from_path("x.trig"), RdfFormat::kTriG);
    EXPECT_EQ(to_string(RdfFormat::kTriG), "trig");
    EXPECT_EQ(media_type(RdfFormat::kNTriples), "application/n-triples");
}

TEST(RdfFormat, UnknownNamesTheAcceptedOnes) {
    auto bad = format_from_name("rdfxml");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_NE(bad.error().message.find("ntriples"), std::string::npos);
    EXPECT_NE(bad.error().message.find("trig"), std::string::npos);
    auto ext = format_from_path("data.json");
    ASSERT_FALSE(ext);
    EXPECT_NE(ext.error().message.find(".ttl"), std::string::npos);
    EXPECT_NE(ext.error().message.find("--format"), std::string::npos);
}

TEST(RdfFormat, GzipIsNotSupported) {
    auto gz = format_from_path("kb.nt.gz");
    ASSERT_FALSE(gz);
    EXPECT_NE(gz.error().message.find(".gz"), std::string::npos);
    EXPECT_NE(gz.error().message.find("not supported"), std::string::npos);
    TempDir dir;
    auto read = read_all(dir.write("kb.nt.gz", "x"));
    ASSERT_FALSE(read.stats);
    EXPECT_NE(read.stats.error().message.find("not supported"), std::string::npos);
}

TEST(RdfReader, NTriplesTermsLiteralsAndEscapes) {
    TempDir dir;
    const auto file = dir.write("a.nt",
                                "# a comment\n"
                                "<http://ex/s> <http://ex/p> <http://ex/o> .\n"
                                "\n"
                                "<http://ex/s> <http://ex/p> \"plain\" .\n"
                                "<http://ex/s> <http://ex/p> \"typed\"^^<http://ex/T> .\n"
                                "<http://ex/s> <http://ex/p> \"str\"^^"
                                "<http://www.w3.org/2001/XMLSchema#string> .\n"
                                "<http://ex/s> <http://ex/p> \"chat\"@fr-CA .\n"
                                "<http://ex/s> <http://ex/p> \"q\\\" b\\\\ n\\n t\\t \\u00E9 "
                                "\\U0001F600\" .\r\n"
                                "_:x <http://ex/p> _:y .\n");
    auto read = read_all(file);
    ASSERT_TRUE(read.stats) << read.stats.error().describe();
    EXPECT_EQ(read.stats->statements, 7u);
    EXPECT_EQ(read.stats->bytes, fs::file_size(file));
    ASSERT_EQ(read.triples.size(), 7u);
    EXPECT_EQ(read.triples[0], schema::make_triple(schema::iri(ex("s")), schema::iri(ex("p")),
                                                   schema::iri(ex("o"))));
    EXPECT_EQ(read.triples[1].o, schema::literal("plain"));
    EXPECT_EQ(read.triples[2].o, schema::typed_literal("typed", ex("T")));
    EXPECT_EQ(read.triples[3].o, schema::literal("str"));  // xsd:string in normal form
    EXPECT_TRUE(read.triples[3].o.as_literal().datatype.empty());
    EXPECT_EQ(read.triples[4].o, schema::lang_literal("chat", "fr-CA"));
    EXPECT_EQ(read.triples[5].o, schema::literal("q\" b\\ n\n t\t \u00E9 \U0001F600"));
    ASSERT_TRUE(read.triples[6].s.is_blank());
    ASSERT_TRUE(read.triples[6].o.is_blank());
    EXPECT_NE(read.triples[6].s, read.triples[6].o);
    EXPECT_FALSE(read.triples[0].graph.has_value());
}

TEST(RdfReader, NQuadsGraphsAndGraphOverride) {
    TempDir dir;
    const auto file = dir.write("a.nq",
                                "<http://ex/s> <http://ex/p> \"1\" <http://ex/g1> .\n"
                                "<http://ex/s> <http://ex/p> \"2\" .\n"
                                "<http://ex/s> <http://ex/p> \"3\" <http://ex/g2> .\n");
    auto plain = read_all(file);
    ASSERT_TRUE(plain.stats) << plain.stats.error().describe();
    ASSERT_EQ(plain.triples.size(), 3u);
    EXPECT_EQ(plain.triples[0].graph, ex("g1"));
    EXPECT_FALSE(plain.triples[1].graph.has_value());
    EXPECT_EQ(plain.triples[2].graph, ex("g2"));

    RdfReadOptions options;
    options.graph = ex("loaded");
    auto moved = read_all(file, options);
    ASSERT_TRUE(moved.stats);
    ASSERT_EQ(moved.triples.size(), 3u);
    EXPECT_EQ(moved.triples[0].graph, ex("g1"));  // named graphs keep theirs
    EXPECT_EQ(moved.triples[1].graph, ex("loaded"));
    EXPECT_EQ(moved.triples[2].graph, ex("g2"));
}

TEST(RdfReader, TurtlePrefixesBaseCollectionsAndPropertyLists) {
    TempDir dir;
    const auto file = dir.write("a.ttl",
                                "@prefix ex: <http://ex/> .\n"
                                "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
                                "@base <http://base/dir/> .\n"
                                "ex:a ex:p <rel> , [ ex:q \"in\" ] ;\n"
                                "     ex:list ( 1 2.5 true ) ;\n"
                                "     ex:n \"7\"^^xsd:int ;\n"
                                "     ex:long \"\"\"two\nlines\"\"\" .\n"
                                "<../up> a ex:C .\n");
    auto read = read_all(file);
    ASSERT_TRUE(read.stats) << read.stats.error().describe();
    EXPECT_EQ(read.stats->statements, 13u);
    const auto& t = read.triples;
    ASSERT_EQ(t.size(), 13u);
    EXPECT_EQ(t[0], schema::make_triple(schema::iri(ex("a")), schema::iri(ex("p")),
                                        schema::iri("http://base/dir/rel")));
    // [ ex:q "in" ]: one blank node, object then subject.
    ASSERT_TRUE(t[1].o.is_blank());
    EXPECT_EQ(t[2].s, t[1].o);
    EXPECT_EQ(t[2].o, schema::literal("in"));
    // ( 1 2.5 true ): rdf:first/rdf:rest chain ending in rdf:nil.
    const std::string rdf = "http://www.w3.org/1999/02/22-rdf-syntax-ns#";
    EXPECT_EQ(t[4].p, schema::iri(rdf + "first"));
    EXPECT_EQ(t[4].o, schema::typed_literal("1", schema::kXsdInteger));
    EXPECT_EQ(t[6].o, schema::typed_literal("2.5", schema::kXsdDecimal));
    EXPECT_EQ(t[8].o, schema::typed_literal("true", schema::kXsdBoolean));
    EXPECT_EQ(t[9].o, schema::iri(rdf + "nil"));
    EXPECT_EQ(t[10].o, schema::typed_literal("7", "http://www.w3.org/2001/XMLSchema#int"));
    EXPECT_EQ(t[11].o, schema::literal("two\nlines"));
    EXPECT_EQ(t[12], schema::make_triple(schema::iri("http://base/up"), schema::iri(rdf + "type"),
                                         schema::iri(ex("C"))));
}

TEST(RdfReader, RelativeIrisUseTheFileUriByDefaultOrTheGivenBase) {
    TempDir dir;
    const auto file = dir.write("rel.ttl", "<s> <p> <#o> .\n");
    auto read = read_all(file);
    ASSERT_TRUE(read.stats) << read.stats.error().describe();
    ASSERT_EQ(read.triples.size(), 1u);
    const std::string uri = "file://" + fs::absolute(file).string();
    EXPECT_EQ(read.triples[0].o, schema::iri(uri + "#o"));
    RdfReadOptions options;
    options.base_iri = "http://base/x/";
    auto based = read_all(file, options);
    ASSERT_TRUE(based.stats);
    EXPECT_EQ(based.triples[0].s, schema::iri("http://base/x/s"));
}

TEST(RdfReader, TriGNamedGraphs) {
    TempDir dir;
    const auto file = dir.write("a.trig",
                                "@prefix ex: <http://ex/> .\n"
                                "ex:d ex:p ex:o .\n"
                                "ex:g1 { ex:a ex:p ex:b . ex:a ex:p ex:c }\n"
                                "GRAPH ex:g2 { ex:x ex:p \"y\"@en }\n"
                                "_:bg { ex:u ex:p ex:v }\n");
    RdfReadOptions options;
    options.graph = ex("default");
    auto read = read_all(file, options);
    ASSERT_TRUE(read.stats) << read.stats.error().describe();
    ASSERT_EQ(read.triples.size(), 5u);
    EXPECT_EQ(read.triples[0].graph, ex("default"));
    EXPECT_EQ(read.triples[1].graph, ex("g1"));
    EXPECT_EQ(read.triples[2].graph, ex("g1"));
    EXPECT_EQ(read.triples[3].graph, ex("g2"));
    EXPECT_EQ(read.triples[3].o, schema::lang_literal("y", "en"));
    // A blank-node graph name becomes an IRI carrying its file-scoped label.
    ASSERT_TRUE(read.triples[4].graph.has_value());
    EXPECT_EQ(read.triples[4].graph->rfind("urn:glassbox:bnode:f", 0), 0u);
    EXPECT_EQ(read.triples[4].graph->substr(read.triples[4].graph->size() - 3), "_bg");
}

TEST(RdfReader, BatchesOfThreeForTenStatements) {
    TempDir dir;
    std::string text;
    for (int i = 0; i < 10; ++i) {
        text += "<http://ex/s> <http://ex/p> \"" + std::to_string(i) + "\" .\n";
    }
    for (const auto& [name, content] : {std::pair<std::string, std::string>{"b.nt", text},
                                        {"b.ttl", "@prefix ex: <http://ex/> .\n" + text}}) {
        RdfReadOptions options;
        options.batch_size = 3;
        auto read = read_all(dir.write(name, content), options);
        ASSERT_TRUE(read.stats) << read.stats.error().describe();
        EXPECT_EQ(read.batch_sizes, (std::vector<std::size_t>{3, 3, 3, 1})) << name;
        ASSERT_EQ(read.triples.size(), 10u);
        for (int i = 0; i < 10; ++i) {
            EXPECT_EQ(read.triples[static_cast<std::size_t>(i)].o,
                      schema::literal(std::to_string(i)));
        }
    }
}

TEST(RdfReader, SyntaxErrorHasExactLineAndColumn) {
    TempDir dir;
    const auto nt = dir.write("bad.nt",
                              "<http://ex/s> <http://ex/p> \"ok\" .\n"
                              "<http://ex/s> <http://ex/p> oops .\n");
    auto read = read_all(nt);
    ASSERT_FALSE(read.stats);
    EXPECT_EQ(read.stats.error().type, base::ErrorType::kInvalidRequest);
    // "oops" starts at byte 29 of line 2 (1-based).
    EXPECT_EQ(read.stats.error().message.rfind(nt.string() + ":2:29: ", 0), 0u)
        << read.stats.error().message;
    // The place as data too (the gateway's problem members).
    EXPECT_EQ(read.stats.error().place, (base::ErrorPlace{nt.string(), 2, 29}));

    const auto ttl = dir.write("bad.ttl",
                               "@prefix ex: <http://ex/> .\n"
                               "ex:a ex:p ex:b .\n"
                               "ex:a ex:p ;\n");
    auto turtle = read_all(ttl);
    ASSERT_FALSE(turtle.stats);
    EXPECT_EQ(turtle.stats.error().message.rfind(ttl.string() + ":3:11: ", 0), 0u)
        << turtle.stats.error().message;
    EXPECT_EQ(turtle.stats.error().place, (base::ErrorPlace{ttl.string(), 3, 11}));
}

TEST(RdfReader, InvalidUtf8IsAnErrorWithItsPlace) {
    TempDir dir;
    const auto nt = dir.write("u.nt",
                              "<http://ex/s> <http://ex/p> \"fine\" .\n"
                              "<http://ex/s> <http://ex/p> \"ab\xC3(\" .\n");
    auto read = read_all(nt);
    ASSERT_FALSE(read.stats);
    EXPECT_EQ(read.stats.error().message.rfind(nt.string() + ":2:32: invalid UTF-8", 0), 0u)
        << read.stats.error().message;

    const auto ttl = dir.write("u.ttl",
                               "@prefix ex: <http://ex/> .\n"
                               "ex:a ex:p <http://ex/\xFF> .\n");
    auto turtle = read_all(ttl);
    ASSERT_FALSE(turtle.stats);
    EXPECT_EQ(turtle.stats.error().message.rfind(ttl.string() + ":2:22: invalid UTF-8", 0), 0u)
        << turtle.stats.error().message;
}

TEST(RdfReader, EmptyFileIsZeroStatements) {
    TempDir dir;
    for (const char* name : {"e.nt", "e.nq", "e.ttl", "e.trig"}) {
        bool called = false;
        auto stats = read_rdf(dir.write(name, ""), {}, [&](std::span<const Triple>) {
            called = true;
            return base::Result<void>{};
        });
        ASSERT_TRUE(stats) << name << ": " << stats.error().describe();
        EXPECT_EQ(stats->statements, 0u) << name;
        EXPECT_FALSE(called) << name;
    }
}

TEST(RdfReader, MissingFileIsNotFound) {
    TempDir dir;
    const auto missing = dir.path() / "nope.nt";
    auto read = read_all(missing);
    ASSERT_FALSE(read.stats);
    EXPECT_EQ(read.stats.error().type, base::ErrorType::kNotFound);
    EXPECT_NE(read.stats.error().message.find(missing.string()), std::string::npos);
    const auto folder = dir.path() / "folder.nt";
    fs::create_directories(folder);
    auto dir_read = read_all(folder);
    ASSERT_FALSE(dir_read.stats);
    EXPECT_EQ(dir_read.stats.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_NE(dir_read.stats.error().message.find(folder.string()), std::string::npos);
}

TEST(RdfReader, LenientNTriplesAndNQuadsSkipOnlyTheBadLine) {
    TempDir dir;
    const std::string good = "<http://ex/s> <http://ex/p> \"good\" .\n";
    const std::string body = good + "<http://ex/s> <http://ex/p> \"no dot\"\n" +           // line 2
                             good + "<http://ex/s> <http://ex/p> bad .\n" +                // line 4
                             good + "<http://ex/s> <http://ex/p> \"x\xFF\" .\n" +          // line 6
                             good + "<http://ex/s> <http://ex/p> \"trailing\" . junk\n" +  // line 8
                             good;
    for (const char* name : {"l.nt", "l.nq"}) {
        RdfReadOptions options;
        options.lenient = true;
        auto read = read_all(dir.write(name, body), options);
        ASSERT_TRUE(read.stats) << name << ": " << read.stats.error().describe();
        EXPECT_EQ(read.stats->statements, 5u) << name;
        EXPECT_EQ(read.stats->skipped, 4u) << name;
        EXPECT_EQ(read.stats->issues, 4u) << name;
        ASSERT_EQ(read.issues.size(), 4u) << name;
        EXPECT_EQ(read.issues[0].line, 2u);
        EXPECT_EQ(read.issues[1].line, 4u);
        EXPECT_EQ(read.issues[1].column, 29u);
        EXPECT_EQ(read.issues[2].line, 6u);
        EXPECT_EQ(read.issues[2].column, 31u);
        EXPECT_EQ(read.issues[3].line, 8u);
        for (const auto& t : read.triples) EXPECT_EQ(t.o, schema::literal("good")) << name;
        EXPECT_EQ(read.issues[1].describe().rfind((dir.path() / name).string() + ":4:29: ", 0), 0u);
    }
}

TEST(RdfReader, LenientTurtleResumesAtTheNextLine) {
    TempDir dir;
    const auto file = dir.write("l.ttl",
                                "@prefix ex: <http://ex/> .\n"
                                "ex:a ex:p ex:b .\n"
                                "ex:bad ex:p ex:o1 ;\n"
                                "   ex:p2 bad bad .\n"
                                "ex:c ex:p \"\xFF\" .\n"
                                "ex:d ex:p [ ex:q ex:r ] .\n"
                                "ex:e ex:p undefined:x .\n"
                                "ex:f ex:p ex:g .\n");
    RdfReadOptions options;
    options.lenient = true;
    auto read = read_all(file, options);
    ASSERT_TRUE(read.stats) << read.stats.error().describe();
    // Kept: ex:a, ex:bad's first statement (emitted before its error), ex:d's two, ex:f.
    EXPECT_EQ(read.stats->statements, 5u);
    EXPECT_EQ(read.stats->skipped, 3u);
    ASSERT_EQ(read.issues.size(), 3u);
    EXPECT_EQ(read.issues[0].line, 4u);
    EXPECT_EQ(read.issues[1].line, 5u);
    EXPECT_EQ(read.issues[1].column, 12u);
    EXPECT_NE(read.issues[2].message.find("undefined"), std::string::npos);
    EXPECT_TRUE(contains(
        read.triples,
        schema::make_triple(schema::iri(ex("f")), schema::iri(ex("p")), schema::iri(ex("g")))));
    EXPECT_TRUE(contains(
        read.triples,
        schema::make_triple(schema::iri(ex("bad")), schema::iri(ex("p")), schema::iri(ex("o1")))));
}

TEST(RdfReader, LenientTriGErrorInsideAGraphBlock) {
    TempDir dir;
    const auto file = dir.write("l.trig",
                                "@prefix ex: <http://ex/> .\n"
                                "ex:g {\n"
                                " ex:a ex:p ex:b .\n"
                                " ex:bad bad .\n"  // line 4
                                " ex:c ex:p ex:d .\n"
                                " ex:e ex:p ex:f .\n"
                                "}\n"  // line 7: serd fails here without saying where
                                "ex:h ex:p ex:i .\n");
    RdfReadOptions options;
    options.lenient = true;
    auto read = read_all(file, options);
    ASSERT_TRUE(read.stats) << read.stats.error().describe();
    // Each good statement once; the two after the error lost their graph (see the header).
    ASSERT_EQ(read.triples.size(), 4u);
    EXPECT_EQ(read.triples[0].graph, ex("g"));
    EXPECT_EQ(read.triples[1].s, schema::iri(ex("c")));
    EXPECT_FALSE(read.triples[1].graph.has_value());
    EXPECT_EQ(read.triples[2].s, schema::iri(ex("e")));
    EXPECT_EQ(read.triples[3].s, schema::iri(ex("h")));
    ASSERT_EQ(read.issues.size(), 2u);
    EXPECT_EQ(read.issues[0].line, 4u);
    EXPECT_EQ(read.issues[1].line, 7u);
    EXPECT_EQ(read.issues[1].column, 1u);

    options.lenient = false;
    auto strict = read_all(dir.write("s.ttl", "<http://ex/a> <http://ex/p> 1 .\n  } .\n"), options);
    ASSERT_FALSE(strict.stats);
    EXPECT_NE(strict.stats.error().message.find("s.ttl:2:3: "), std::string::npos)
        << strict.stats.error().message;
}

TEST(RdfReader, LenientTurtleRestartKeepsGeneratedBlankNodesApart) {
    TempDir dir;
    const auto file = dir.write("g.ttl",
                                "@prefix ex: <http://ex/> .\n"
                                "ex:a ex:p [ ex:q 1 ] .\n"
                                "ex:bad bad .\n"
                                "ex:b ex:p [ ex:q 2 ] .\n");
    RdfReadOptions options;
    options.lenient = true;
    auto read = read_all(file, options);
    ASSERT_TRUE(read.stats) << read.stats.error().describe();
    ASSERT_EQ(read.triples.size(), 4u);
    EXPECT_NE(read.triples[0].o, read.triples[2].o);
}

TEST(RdfReader, BlankNodesAreScopedPerFile) {
    TempDir dir;
    const std::string text = "_:x <http://ex/p> \"v\" .\n";
    const auto one = dir.write("one.nt", text);
    const auto two = dir.write("two.nt", text);
    auto a = read_all(one);
    auto b = read_all(two);
    auto again = read_all(one);
    ASSERT_TRUE(a.stats && b.stats && again.stats);
    ASSERT_EQ(a.triples.size(), 1u);
    ASSERT_EQ(b.triples.size(), 1u);
    EXPECT_NE(a.triples[0].s, b.triples[0].s);
    EXPECT_EQ(a.triples[0].s, again.triples[0].s);  // a reload gives the same node
    const auto& id = a.triples[0].s.as_blank().id;
    EXPECT_EQ(id.size(), 11u);  // "f" + 8 hex + "_" + "x"
    EXPECT_EQ(id.back(), 'x');
}

TEST(RdfReader, OnBatchErrorStopsTheRead) {
    TempDir dir;
    std::string text;
    for (int i = 0; i < 100; ++i)
        text += "<http://ex/s> <http://ex/p> \"" + std::to_string(i) + "\" .\n";
    for (const char* name : {"stop.nt", "stop.ttl"}) {
        RdfReadOptions options;
        options.batch_size = 10;
        int calls = 0;
        auto stats = read_rdf(dir.write(name, text), options, [&](std::span<const Triple>) {
            ++calls;
            if (calls == 2) {
                return base::Result<void>(
                    base::make_error(base::ErrorType::kServiceUnavailable, "store gone"));
            }
            return base::Result<void>{};
        });
        ASSERT_FALSE(stats) << name;
        EXPECT_EQ(stats.error().type, base::ErrorType::kServiceUnavailable);
        EXPECT_EQ(stats.error().message, "store gone");
        EXPECT_EQ(calls, 2) << name;
    }
}

TEST(RdfReader, UndefinedPrefixIsAnError) {
    TempDir dir;
    const auto file = dir.write("p.ttl", "@prefix ex: <http://ex/> .\nex:a ex:p nope:x .\n");
    auto read = read_all(file);
    ASSERT_FALSE(read.stats);
    EXPECT_EQ(read.stats.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_NE(read.stats.error().message.find("undefined prefix 'nope:'"), std::string::npos)
        << read.stats.error().message;
}

TEST(RdfReader, ThrowingCallbackBecomesAnError) {
    TempDir dir;
    const std::string text = "<http://ex/s> <http://ex/p> <http://ex/o> .\n";
    // batch_size 1: the Turtle batch is sent from inside serd's callback, where nothing may
    // unwind; 10: the last batch is sent after serd returns.
    for (const std::size_t batch_size : {std::size_t{1}, std::size_t{10}}) {
        for (const char* name : {"t.nt", "t.ttl"}) {
            RdfReadOptions options;
            options.batch_size = batch_size;
            auto stats = read_rdf(dir.write(name, text + text), options,
                                  [](std::span<const Triple>) -> base::Result<void> {
                                      throw std::runtime_error("sink broke");
                                  });
            ASSERT_FALSE(stats) << name;
            EXPECT_EQ(stats.error().type, base::ErrorType::kInternal);
            EXPECT_NE(stats.error().message.find("sink broke"), std::string::npos);
        }
    }
}

TEST(RdfReader, ProgressReachesTheFileSize) {
    TempDir dir;
    std::string text;
    for (int i = 0; i < 5000; ++i)
        text += "<http://ex/s> <http://ex/p> \"" + std::to_string(i) + "\" .\n";
    for (const char* name : {"p.nt", "p.ttl"}) {
        const auto file = dir.write(name, text);
        std::uint64_t last = 0;
        std::uint64_t total = 0;
        bool monotonic = true;
        auto stats = read_rdf(
            file, {}, [](std::span<const Triple>) { return base::Result<void>{}; }, {},
            [&](std::uint64_t read, std::uint64_t size) {
                if (read < last) monotonic = false;
                last = read;
                total = size;
            });
        ASSERT_TRUE(stats);
        EXPECT_TRUE(monotonic);
        EXPECT_EQ(total, fs::file_size(file));
        EXPECT_EQ(last, fs::file_size(file));
        EXPECT_EQ(stats->statements, 5000u);
    }
}

TEST(NQuads, RoundTripIsExactForEveryTermKind) {
    TempDir dir;
    const auto file = dir.write("r.trig",
                                "@prefix ex: <http://ex/> .\n"
                                "ex:s ex:p \"q\\\" b\\\\ \\n \\r \\t \\b \\f \\u0001 \\u007F é "
                                "\\U0001F600\" , \"hi\"@en-GB , \"5\"^^ex:T , \"\" ;\n"
                                "  ex:p2 _:node.x , [ ex:p3 ( 1 ) ] .\n"
                                "ex:g { _:a ex:p <http://ex/with%20space> . }\n"
                                "_:bg { ex:s ex:p ex:o }\n");
    auto read = read_all(file);
    ASSERT_TRUE(read.stats) << read.stats.error().describe();
    ASSERT_GE(read.triples.size(), 10u);
    read.triples.push_back(schema::make_triple(schema::blank("odd label!"), schema::iri(ex("p")),
                                               schema::literal("x")));
    std::string text;
    write_nquads(read.triples, text);
    auto parsed = parse_nquads(text);
    ASSERT_TRUE(parsed) << parsed.error().describe() << "\n" << text;
    ASSERT_EQ(parsed->size(), read.triples.size());
    for (std::size_t i = 0; i + 1 < read.triples.size(); ++i) {
        EXPECT_EQ((*parsed)[i], read.triples[i]) << i << "\n" << text;
    }
    // A label outside the grammar is rewritten as schema::to_nquads does.
    EXPECT_EQ(parsed->back().s, schema::blank("oddx20labelx21"));
    // Lines are what schema::to_nquads writes, except that a label with '.' stays as it is.
    std::istringstream lines(text);
    std::string line;
    for (std::size_t i = 0; i + 1 < read.triples.size() && std::getline(lines, line); ++i) {
        if (line.find("node.x") != std::string::npos) continue;
        EXPECT_EQ(line, schema::to_nquads(read.triples[i]));
    }
}

TEST(NQuads, ParseErrorsAreInvalidRequestsWithAPlace) {
    auto bad = parse_nquads("<http://ex/s> <http://ex/p> \"o\" .\n<http://ex/s> <http://ex/p> .\n");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_NE(bad.error().message.find("2:"), std::string::npos) << bad.error().message;
    auto utf8 = parse_nquads("<http://ex/s> <http://ex/p> \"\xC0\xAF\" .\n");
    ASSERT_FALSE(utf8);
    EXPECT_NE(utf8.error().message.find("1:30: invalid UTF-8"), std::string::npos)
        << utf8.error().message;
    auto empty = parse_nquads("");
    ASSERT_TRUE(empty);
    EXPECT_TRUE(empty->empty());
}

TEST(RdfSharedData, PathQuestionFilesReadInFullAndRoundTrip) {
    const fs::path dir = fs::path(GLASSBOX_SHARED_DATA) / "kg-pathquestion";
    if (!fs::exists(dir / "kb.nt")) GTEST_SKIP() << "no shared data at " << dir;
    for (const char* name : {"kb.nt", "labels.nt"}) {
        const auto file = dir / name;
        const std::uint64_t expected = count_statement_lines(file);
        std::uint64_t seen = 0;
        std::string text;
        std::vector<Triple> all;
        auto stats = read_rdf(file, {}, [&](std::span<const Triple> batch) {
            seen += batch.size();
            all.insert(all.end(), batch.begin(), batch.end());
            return base::Result<void>{};
        });
        ASSERT_TRUE(stats) << stats.error().describe();
        EXPECT_EQ(stats->statements, expected) << name;
        EXPECT_EQ(seen, expected) << name;
        if (std::string_view(name) == "kb.nt") {
            EXPECT_EQ(expected, 9859u);
        }
        write_nquads(all, text);
        auto parsed = parse_nquads(text);
        ASSERT_TRUE(parsed) << parsed.error().describe();
        EXPECT_EQ(*parsed, all) << name;
    }
}

// Issue 16: serd quotes the bad bytes of an escape (`\` then the first byte of "é"), and paths
// may hold any bytes: every error text comes out valid UTF-8, the bytes escaped as \xNN.
TEST(RdfReaderErrors, ErrorTextsAreValidUtf8WhateverTheyQuote) {
    TempDir dir;
    const auto escape = dir.write("escape.nt", "<urn:a> <urn:b> \"\\\xC3\xA9\" .\n");
    const auto all = read_all(escape);
    ASSERT_FALSE(all.stats);
    EXPECT_FALSE(base::find_invalid_utf8(all.stats.error().message)) << all.stats.error().message;
    EXPECT_NE(all.stats.error().message.find("escape.nt:1:"), std::string::npos)
        << all.stats.error().message;

    const auto missing = read_all(dir.path() / "no\xFFsuch.nt");
    ASSERT_FALSE(missing.stats);
    EXPECT_EQ(missing.stats.error().type, base::ErrorType::kNotFound);
    EXPECT_NE(missing.stats.error().message.find("no\\xFFsuch.nt"), std::string::npos)
        << missing.stats.error().message;

    const auto odd = format_from_path("data.\xFF");
    ASSERT_FALSE(odd);
    EXPECT_FALSE(base::find_invalid_utf8(odd.error().message)) << odd.error().message;

    RdfReadOptions lenient;
    lenient.lenient = true;
    const auto skipped = read_all(
        dir.write("lenient.nt", "<urn:a> <urn:b> \"\\\xC3\xA9\" .\n<urn:a> <urn:b> <urn:c> .\n"),
        lenient);
    ASSERT_TRUE(skipped.stats) << skipped.stats.error().message;
    ASSERT_EQ(skipped.issues.size(), 1u);
    EXPECT_FALSE(base::find_invalid_utf8(skipped.issues[0].describe()))
        << skipped.issues[0].describe();
}

// Issue 16, point 10: check_statement refuses a statement where it stands: the exact line for
// N-Triples, the line read up to for Turtle; lenient mode skips it and goes on.
TEST(RdfReaderCheckStatement, ARefusedStatementIsAnErrorAtItsLineOrSkipped) {
    TempDir dir;
    RdfReadOptions options;
    options.check_statement = [](const Triple& t) -> std::optional<std::string> {
        if (t.o.is_literal() && t.o.as_literal().value.size() > 100) return "too long a literal";
        return std::nullopt;
    };
    const std::string long_literal(500, 'x');
    const auto nt = dir.write("big.nt", "<urn:a> <urn:p> \"short\" .\n\n<urn:b> <urn:p> \"" +
                                            long_literal + "\" .\n<urn:c> <urn:p> \"short\" .\n");
    auto strict = read_all(nt, options);
    ASSERT_FALSE(strict.stats);
    EXPECT_EQ(strict.stats.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_NE(strict.stats.error().message.find("big.nt:3: too long a literal"), std::string::npos)
        << strict.stats.error().message;

    const auto ttl =
        dir.write("big.ttl", "@prefix ex: <urn:ex:> .\nex:a ex:p \"short\" .\nex:b ex:p\n  \"" +
                                 long_literal + "\" .\n");
    auto turtle = read_all(ttl, options);
    ASSERT_FALSE(turtle.stats);
    EXPECT_NE(turtle.stats.error().message.find("big.ttl: near line"), std::string::npos)
        << turtle.stats.error().message;
    EXPECT_NE(turtle.stats.error().message.find("too long a literal"), std::string::npos);

    options.lenient = true;
    auto lenient = read_all(nt, options);
    ASSERT_TRUE(lenient.stats) << lenient.stats.error().message;
    EXPECT_EQ(lenient.triples.size(), 2u);
    EXPECT_EQ(lenient.stats->skipped, 1u);
    ASSERT_EQ(lenient.issues.size(), 1u);
    EXPECT_EQ(lenient.issues[0].line, 3u);
}

}  // namespace
}  // namespace glassbox::loader
