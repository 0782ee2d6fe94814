// bench_rag: graph-RAG latency on generated knowledge graphs of 10k, 100k and 1M triples.
//
// Each graph comes from a deterministic generator (fixed seed): typed entities with English-like
// rdfs:labels, ~30 relations between entity types (and a few literal-valued ones), subjects and
// objects drawn with a heavy tail (a few hubs with thousands of edges, most entities with a
// handful), an rdf:type and an rdfs:label for every entity. It is written as N-Triples and
// loaded through `glassbox load rdf` (one collection per size) into a pipeline of real
// processes: broker, trace collector, embeddings, store, llm (extractive, the default) and two
// graph-rag workers: `graph-rag` as configured, and one started with the bench-only env
// GLASSBOX_BENCH_NO_EXPLAIN=1 under the service name `graph-rag-noexplain`. A fixed set of
// generated questions mentioning entities (1-hop and 2-hop phrasings) goes to both, alternating
// which one goes first per question, one request in flight.
//
// Reported per size: end-to-end p50/p90/p99 (request sent to FINAL received, through the bus),
// the time per step (gb:durationMs of Grounding, Exploration, Focus, Synthesis in the explain
// triples received inline), explain messages, triples and KiB per query, and the explain overhead
// (p50 with explain / p50 without). Targets: p50 <= 20 ms at 100k; p50 at 1M <= 2x p50 at 10k;
// explain overhead <= 5 %.
//
// Usage: bench_rag [--quick] [--sizes 10000,100000,1000000] [--queries N] [--warmup N]
//                  [--dir DIR] [--json FILE]
//   --quick  10k and 100k only, 200 queries unless --queries says (a smoke run).
//   --queries  per size (default 1,000).
//   --dir    keep generated files and the home there; a collection already holding the graph
//            (same quad count) is not loaded again.
//   --no-collector   run no trace collector (the broker spools explain messages, nobody stores
//                    them): separates the collector's share of the explain overhead.
//   --generate-only  write the graphs and questions to --dir, print their degree profile, exit.
//   --backends       (issue 34) everything twice in one run: the stores on SQLite (the default)
//                    and then on PostgreSQL (a durable server of this run's own on a random
//                    loopback port: fsync and synchronous_commit on), then both p50s and load
//                    times side by side. Targets: graph-rag p50 on PostgreSQL <= 1.5x SQLite's
//                    at 100k; RDF load (`glassbox load rdf`, indexing included) on PostgreSQL
//                    >= 0.5x SQLite's rate.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_util.hpp"
#include "bench/run_facts.hpp"
#include "bus/bus_client.hpp"
#include "schema/json_fast.hpp"
#include "schema/messages.hpp"
#include "schema/vocabulary.hpp"
#include "tests/support/postgres_server.hpp"
#include "tests/support/process.hpp"

#ifndef GLASSBOX_BINARY
#define GLASSBOX_BINARY "glassbox"
#endif
#ifndef GLASSBOX_SOURCE_DIR
#define GLASSBOX_SOURCE_DIR "."
#endif

namespace {

using namespace glassbox;
using namespace glassbox::bench;
namespace fs = std::filesystem;
namespace vocab = schema::vocab;
using integration::ChildProcess;
using nlohmann::json;
using std::chrono::milliseconds;

const std::string kEntity = "http://example.org/bench/e/";
const std::string kRelation = "http://example.org/bench/r/";
const std::string kClass = "http://example.org/bench/c/";
const std::string kNoExplainService = "graph-rag-noexplain";

std::string with_thousands(std::uint64_t n) {
    std::string digits = std::to_string(n);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string size_name(std::size_t n) {
    if (n % 1'000'000 == 0) return std::to_string(n / 1'000'000) + "M";
    if (n % 1'000 == 0) return std::to_string(n / 1'000) + "k";
    return std::to_string(n);
}

// ---- the generated knowledge graph ---------------------------------------------------------

enum Type : std::uint8_t {
    kPerson,
    kCity,
    kCountry,
    kOrganization,
    kFilm,
    kBook,
    kTeam,
    kAward,
    kTypeCount
};
const char* const kTypeNames[kTypeCount] = {"Person", "City", "Country", "Organization",
                                            "Film",   "Book", "Team",    "Award"};
// Share of entities per type, in thousandths.
const int kTypeShare[kTypeCount] = {400, 120, 10, 150, 120, 120, 50, 30};

struct Relation {
    const char* name;   // IRI local name
    const char* label;  // rdfs:label, as a question would phrase it
    Type domain;
    std::optional<Type> range;  // none: a literal (a year or a number)
    const char* question;       // "{s}" is the subject's label
    const char* clause;  // the object as a noun phrase ("{s}" the subject); none for literals
};

const std::vector<Relation> kRelations = {
    {"born_in", "born in", kPerson, kCity, "Where was {s} born?", "the city where {s} was born"},
    {"lives_in", "lives in", kPerson, kCity, "Which city does {s} live in?",
     "the city {s} lives in"},
    {"citizen_of", "citizen of", kPerson, kCountry, "Which country is {s} a citizen of?",
     "the country of {s}"},
    {"works_for", "works for", kPerson, kOrganization, "Which organization does {s} work for?",
     "the employer of {s}"},
    {"plays_for", "plays for", kPerson, kTeam, "Which team does {s} play for?", "the team of {s}"},
    {"spouse", "spouse", kPerson, kPerson, "Who is the spouse of {s}?", "the spouse of {s}"},
    {"child_of", "child of", kPerson, kPerson, "Whose child is {s}?", "the parent of {s}"},
    {"friend_of", "friend of", kPerson, kPerson, "Who is a friend of {s}?", "a friend of {s}"},
    {"won_award", "won award", kPerson, kAward, "Which award did {s} win?", "the award {s} won"},
    {"directed", "directed", kPerson, kFilm, "Which film did {s} direct?", "the film {s} directed"},
    {"acted_in", "acted in", kPerson, kFilm, "Which film did {s} act in?", "a film {s} acted in"},
    {"wrote", "wrote", kPerson, kBook, "Which book did {s} write?", "a book {s} wrote"},
    {"educated_at", "educated at", kPerson, kOrganization, "Where was {s} educated?",
     "the school where {s} was educated"},
    {"birth_year", "birth year", kPerson, std::nullopt, "In which year was {s} born?", nullptr},
    {"located_in", "located in", kCity, kCountry, "Which country is {s} located in?",
     "the country {s} is in"},
    {"twinned_with", "twinned with", kCity, kCity, "Which city is {s} twinned with?",
     "the twin city of {s}"},
    {"population", "population", kCity, std::nullopt, "What is the population of {s}?", nullptr},
    {"capital", "capital", kCountry, kCity, "What is the capital of {s}?", "the capital of {s}"},
    {"borders", "borders", kCountry, kCountry, "Which country borders {s}?", "a neighbour of {s}"},
    {"headquartered_in", "headquartered in", kOrganization, kCity, "Where is {s} headquartered?",
     "the city where {s} is headquartered"},
    {"founded_by", "founded by", kOrganization, kPerson, "Who founded {s}?", "the founder of {s}"},
    {"founded_in_year", "founded in year", kOrganization, std::nullopt,
     "In which year was {s} founded?", nullptr},
    {"part_of", "part of", kOrganization, kOrganization, "Which organization is {s} part of?",
     "the parent organization of {s}"},
    {"set_in", "set in", kFilm, kCity, "Where is the film {s} set?", "the city where {s} is set"},
    {"produced_by", "produced by", kFilm, kOrganization, "Which studio produced {s}?",
     "the studio that produced {s}"},
    {"based_on", "based on", kFilm, kBook, "Which book is the film {s} based on?",
     "the book {s} is based on"},
    {"release_year", "release year", kFilm, std::nullopt, "When was {s} released?", nullptr},
    {"published_by", "published by", kBook, kOrganization, "Who published {s}?",
     "the publisher of {s}"},
    {"book_set_in", "set in", kBook, kCity, "Where is the book {s} set?",
     "the city where {s} is set"},
    {"team_based_in", "based in", kTeam, kCity, "Which city is {s} based in?",
     "the home city of {s}"},
    {"league", "plays in league", kTeam, kOrganization, "Which league does {s} play in?",
     "the league of {s}"},
    {"presented_by", "presented by", kAward, kOrganization, "Who presents the {s}?",
     "the organization presenting {s}"},
};

const std::vector<std::string> kSyllables = {
    "ka",  "lo",  "mer", "an",  "dri", "vel", "so",  "ta",  "ren", "mi",  "bor", "ga",
    "lin", "do",  "fe",  "ru",  "sha", "tor", "vi",  "el",  "ma",  "ni",  "pe",  "qua",
    "sen", "tu",  "wen", "ya",  "zor", "bel", "cor", "dan", "es",  "fin", "gor", "hal",
    "is",  "jor", "kel", "lam", "mon", "nor", "ol",  "par", "ros", "sil", "tam", "ul"};

class Rng {
public:
    explicit Rng(std::uint64_t seed) : engine_(seed) {}
    std::uint64_t next() { return engine_(); }
    std::size_t below(std::size_t n) { return static_cast<std::size_t>(engine_() % n); }
    double unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
    // A heavy-tailed rank in [0, n): P(k) ~ 1/(k+1) (Zipf, exponent 1).
    std::size_t zipf(std::size_t n) {
        const double r = std::exp(unit() * std::log(static_cast<double>(n) + 1.0)) - 1.0;
        return std::min(n - 1, static_cast<std::size_t>(r));
    }

private:
    std::mt19937_64 engine_;
};

std::string capitalized(std::string s) {
    if (!s.empty()) s[0] = static_cast<char>(s[0] - 'a' + 'A');
    return s;
}

std::string word(Rng& rng, std::size_t syllables) {
    std::string out;
    for (std::size_t i = 0; i < syllables; ++i) out += kSyllables[rng.below(kSyllables.size())];
    return capitalized(out);
}

std::string make_label(Rng& rng, Type type) {
    static const std::vector<std::string> city = {"burg",  "ton",   "ville", "port",
                                                  "field", "mouth", "stad",  "haven"};
    static const std::vector<std::string> country = {"ia", "land", "stan", "onia", "ador"};
    static const std::vector<std::string> org = {
        "Industries", "Group",   "University", "Institute", "Bank",
        "Records",    "Studios", "Press",      "League",    "Foundation"};
    static const std::vector<std::string> adjectives = {"Silent", "Crimson", "Last",    "Hidden",
                                                        "Golden", "Broken",  "Distant", "Iron",
                                                        "Secret", "Endless", "Frozen",  "Wild"};
    static const std::vector<std::string> nouns = {"River",  "Garden", "Empire",  "Voyage",
                                                   "Mirror", "Storm",  "Harbor",  "Crown",
                                                   "Letter", "Winter", "Machine", "Island"};
    switch (type) {
        case kPerson:
            return word(rng, 2) + " " + word(rng, 2 + rng.below(2));
        case kCity:
            return word(rng, 2) + city[rng.below(city.size())];
        case kCountry:
            return word(rng, 2) + country[rng.below(country.size())];
        case kOrganization:
            return word(rng, 2 + rng.below(2)) + " " + org[rng.below(org.size())];
        case kFilm:
            return "The " + adjectives[rng.below(adjectives.size())] + " " +
                   nouns[rng.below(nouns.size())] + " of " + word(rng, 2);
        case kBook:
            return nouns[rng.below(nouns.size())] + " of the " +
                   adjectives[rng.below(adjectives.size())] + " " + word(rng, 2);
        case kTeam:
            return word(rng, 2) + " " + nouns[rng.below(nouns.size())] + "s";
        case kAward:
            return word(rng, 2) + " " + adjectives[rng.below(adjectives.size())] + " Award";
        case kTypeCount:
            break;
    }
    return word(rng, 3);
}

struct Fact {
    std::uint32_t s = 0;
    std::uint16_t p = 0;
    std::uint32_t o = 0;  // entity index, or the literal's value
};

struct Graph {
    std::size_t target = 0;
    std::vector<std::string> labels;
    std::vector<Type> types;
    std::vector<Fact> facts;
    std::size_t triples = 0;  // facts + types + labels (entities, classes, relations)
};

bool literal_relation(std::size_t p) { return !kRelations[p].range.has_value(); }

// About `target` triples: an rdfs:label and an rdf:type for each of target/8 entities, labels for
// the classes and relations, and the rest relation facts (no duplicates).
Graph generate(std::size_t target, std::uint64_t seed) {
    Graph g;
    g.target = target;
    Rng rng(seed);
    const std::size_t entities = std::max<std::size_t>(target / 8, 200);
    std::vector<std::vector<std::uint32_t>> by_type(kTypeCount);
    std::unordered_set<std::string> used;
    for (std::size_t i = 0; i < entities; ++i) {
        // Types by share: a deterministic sweep keeps every type present in small graphs too.
        const std::size_t slot = (i * 997) % 1000;
        Type type = kPerson;
        std::size_t acc = 0;
        for (int t = 0; t < kTypeCount; ++t) {
            acc += static_cast<std::size_t>(kTypeShare[t]);
            if (slot < acc) {
                type = static_cast<Type>(t);
                break;
            }
        }
        std::string label = make_label(rng, type);
        for (int n = 2; !used.insert(label).second; ++n)
            label = make_label(rng, type) + (n > 4 ? " " + std::to_string(n) : "");
        g.labels.push_back(std::move(label));
        g.types.push_back(type);
        by_type[type].push_back(static_cast<std::uint32_t>(i));
    }
    // Hubs are not the first entities of each type: shuffle the Zipf ranks.
    for (auto& list : by_type) {
        for (std::size_t i = list.size(); i > 1; --i) std::swap(list[i - 1], list[rng.below(i)]);
    }
    std::vector<std::vector<std::uint16_t>> relations_of(kTypeCount);
    for (std::size_t p = 0; p < kRelations.size(); ++p)
        relations_of[kRelations[p].domain].push_back(static_cast<std::uint16_t>(p));
    const std::size_t fixed = 2 * entities + kTypeCount + kRelations.size();
    const std::size_t wanted = target > fixed ? target - fixed : 0;
    std::unordered_set<std::uint64_t> seen;
    seen.reserve(wanted * 2);
    // Subjects: half uniform, half heavy-tailed (some entities have many outgoing facts).
    std::vector<std::uint32_t> subject_order(entities);
    for (std::size_t i = 0; i < entities; ++i) subject_order[i] = static_cast<std::uint32_t>(i);
    for (std::size_t i = entities; i > 1; --i)
        std::swap(subject_order[i - 1], subject_order[rng.below(i)]);
    std::size_t attempts = 0;
    while (g.facts.size() < wanted && attempts < wanted * 20) {
        ++attempts;
        const std::uint32_t s = rng.unit() < 0.5 ? static_cast<std::uint32_t>(rng.below(entities))
                                                 : subject_order[rng.zipf(entities)];
        const auto& candidates = relations_of[g.types[s]];
        if (candidates.empty()) continue;
        const std::uint16_t p = candidates[rng.below(candidates.size())];
        std::uint32_t o = 0;
        if (literal_relation(p)) {
            o = kRelations[p].name == std::string("population")
                    ? static_cast<std::uint32_t>(1000 + rng.below(5'000'000))
                    : static_cast<std::uint32_t>(1800 + rng.below(224));
        } else {
            const auto& range = by_type[*kRelations[p].range];
            o = range[rng.zipf(range.size())];
            if (o == s) continue;
        }
        const std::uint64_t key =
            (static_cast<std::uint64_t>(s) << 40) ^ (static_cast<std::uint64_t>(p) << 32) ^ o;
        if (!seen.insert(key).second) continue;
        g.facts.push_back(Fact{s, p, o});
    }
    g.triples = g.facts.size() + fixed;
    return g;
}

std::string entity_iri(std::uint32_t e) { return "<" + kEntity + "e" + std::to_string(e) + ">"; }

void write_ntriples(const Graph& g, const fs::path& path) {
    std::ofstream out(path, std::ios::trunc);
    const std::string label = "<" + std::string(vocab::kRdfsLabel) + ">";
    const std::string type = "<" + std::string(vocab::kRdfType) + ">";
    for (int t = 0; t < kTypeCount; ++t) {
        out << "<" << kClass << kTypeNames[t] << "> " << label << " \"" << kTypeNames[t]
            << "\" .\n";
    }
    for (const auto& r : kRelations)
        out << "<" << kRelation << r.name << "> " << label << " \"" << r.label << "\" .\n";
    for (std::size_t e = 0; e < g.labels.size(); ++e) {
        const auto iri = entity_iri(static_cast<std::uint32_t>(e));
        out << iri << ' ' << label << " \"" << g.labels[e] << "\" .\n";
        out << iri << ' ' << type << " <" << kClass << kTypeNames[g.types[e]] << "> .\n";
    }
    for (const auto& f : g.facts) {
        out << entity_iri(f.s) << " <" << kRelation << kRelations[f.p].name << "> ";
        if (literal_relation(f.p)) {
            out << '"' << f.o << "\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n";
        } else {
            out << entity_iri(f.o) << " .\n";
        }
    }
    if (!out) throw std::runtime_error("cannot write " + path.string());
}

struct Question {
    std::string text;
    std::string answer;  // the answer entity's IRI (not bracketed), empty for a literal answer
    int hops = 1;
};

// `count` questions: 60 % one relation from a mentioned entity, 40 % two relations chained.
std::vector<Question> make_questions(const Graph& g, std::size_t count, std::uint64_t seed) {
    Rng rng(seed);
    std::multimap<std::uint32_t, std::size_t>
        out_edges;  // subject -> fact index (entity objects only)
    for (std::size_t i = 0; i < g.facts.size(); ++i) {
        if (!literal_relation(g.facts[i].p)) out_edges.emplace(g.facts[i].s, i);
    }
    std::vector<Question> out;
    while (out.size() < count) {
        const Fact& f = g.facts[rng.below(g.facts.size())];
        const auto& r = kRelations[f.p];
        Question q;
        if (rng.unit() < 0.4 && !literal_relation(f.p)) {
            const auto [first, last] = out_edges.equal_range(f.o);
            const auto n = static_cast<std::size_t>(std::distance(first, last));
            if (n > 0) {
                auto it = first;
                std::advance(it, static_cast<std::ptrdiff_t>(rng.below(n)));
                const Fact& second = g.facts[it->second];
                // The second relation's question about the first one's object, named by a clause:
                // "Which country is the city where Ann Smith was born located in?"
                std::string inner = r.clause;
                inner.replace(inner.find("{s}"), 3, g.labels[f.s]);
                std::string text = kRelations[second.p].question;
                text.replace(text.find("{s}"), 3, inner);
                q.text = std::move(text);
                q.answer = kEntity + "e" + std::to_string(second.o);
                q.hops = 2;
                out.push_back(std::move(q));
                continue;
            }
        }
        std::string text = r.question;
        text.replace(text.find("{s}"), 3, g.labels[f.s]);
        q.text = std::move(text);
        if (!literal_relation(f.p)) q.answer = kEntity + "e" + std::to_string(f.o);
        out.push_back(std::move(q));
    }
    return out;
}

// ---- the pipeline ----------------------------------------------------------------------------

struct Options {
    std::vector<std::size_t> sizes = {10'000, 100'000, 1'000'000};
    // The paired median's noise at 200 queries was about ±2.5 points on this machine, half the
    // 5 % explain-overhead target; at 1,000 it is about ±1.
    std::size_t queries = 1000;
    std::size_t warmup = 10;
    fs::path dir;
    std::string json_path;
    bool generate_only = false;
    bool collector =
        true;  // --no-collector: explain messages are spooled by the broker, stored by no one
    bool backends = false;  // --backends: SQLite, then PostgreSQL
};

class Pipeline {
public:
    Pipeline(fs::path dir, bool collector)
        : dir_(std::move(dir)), home_(dir_ / "home"), collector_(collector) {
        fs::create_directories(home_);
    }
    ~Pipeline() {
        for (auto it = children_.rbegin(); it != children_.rend(); ++it)
            (*it)->terminate(milliseconds{5000});
    }

    void start() {
        const auto ready = dir_ / "broker.ready.json";
        fs::remove(ready);
        auto& broker =
            spawn("broker", {GLASSBOX_BINARY, "broker", "--bind", "tcp://127.0.0.1:*", "--pub",
                             "tcp://127.0.0.1:*", "--home", (dir_ / "broker-home").string(),
                             "--heartbeat-ms", "1000", "--ready-file", ready.string()});
        auto info = glassbox::integration::wait_for_ready_file(ready, broker, milliseconds{15'000});
        if (!info) throw std::runtime_error("the broker did not start: " + broker.stderr_text());
        endpoint_ = info->value("endpoint", "");
        // Each run stores its traces in a fresh trace store (the knowledge is reused): a store
        // grown by earlier runs would make the collector's share depend on the bench's history.
        for (const char* suffix : {"", "-wal", "-shm"})
            fs::remove(home_ / (std::string("traces.db") + suffix));
        if (collector_) worker("trace-collector", {"trace-collector"});
        worker("embeddings", {"embeddings"});
        worker("store", {"store", "--threads", "2"});
        worker("llm", {"llm"});
        worker("graph-rag", {"graph-rag"});
        {
            // The bench-only switch; the child inherits the environment at fork.
            ::setenv("GLASSBOX_BENCH_NO_EXPLAIN", "1", 1);
            worker("graph-rag-noexplain", {"graph-rag", "--service", kNoExplainService});
            ::unsetenv("GLASSBOX_BENCH_NO_EXPLAIN");
        }
        glassbox::bus::BusClientConfig config;
        config.endpoint = endpoint_;
        client_ = std::make_unique<glassbox::bus::BusClient>(config);
        // The measured queries: bodies kept as text. The FINAL is decoded on the clock; the
        // explain messages are received in full on the clock and decoded by the typed readers
        // after it stops (the figures below come from them): the overhead measured is what
        // emitting, routing, spooling and delivering the trace costs, not how fast this
        // client reads it.
        config.parse_bodies = false;
        query_client_ = std::make_unique<glassbox::bus::BusClient>(config);
        for (const auto* service :
             {"trace", "embeddings", "store", "llm", "graph-rag", kNoExplainService.c_str()}) {
            if (collector_ || std::string(service) != "trace") wait_for_service(service);
        }
    }

    glassbox::bus::BusClient& query_client() { return *query_client_; }

    json call(const std::string& service, const json& body,
              milliseconds deadline = milliseconds{60'000}) {
        auto replies = client_->call(service, body, deadline);
        if (!replies) throw std::runtime_error(service + ": " + replies.error().message);
        return replies->back().body;
    }

    // `glassbox load rdf FILE --collection C`; returns seconds taken.
    double load(const fs::path& file, const std::string& collection) {
        const auto start = Clock::now();
        auto r = glassbox::integration::run_command(
            {GLASSBOX_BINARY, "load", "rdf", file.string(), "--collection", collection, "--broker",
             endpoint_, "--json"},
            dir_, std::chrono::minutes{60});
        if (r.timed_out || !r.status.exited || r.status.code != 0) {
            throw std::runtime_error("glassbox load rdf " + file.string() + " failed (" +
                                     r.status.describe() + "): " + r.err);
        }
        return ms_since(start) / 1000.0;
    }

    std::optional<std::uint64_t> quads(const std::string& collection) {
        auto replies = client_->call("store", json{{"op", "stats"}, {"collection", collection}},
                                     milliseconds{30'000});
        if (!replies) return std::nullopt;
        return replies->back().body.value("quads", std::uint64_t{0});
    }

    long rss_kb(const std::string& name) {
        for (const auto& c : children_) {
            if (c->name() != name) continue;
            std::ifstream status("/proc/" + std::to_string(c->pid()) + "/status");
            std::string line;
            while (std::getline(status, line)) {
                if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
            }
        }
        return -1;
    }

    // User + system CPU time of a child so far (/proc/<pid>/stat), in ms; -1 if unknown.
    double cpu_ms(const std::string& name) {
        for (const auto& c : children_) {
            if (c->name() != name) continue;
            std::ifstream stat("/proc/" + std::to_string(c->pid()) + "/stat");
            std::string text((std::istreambuf_iterator<char>(stat)),
                             std::istreambuf_iterator<char>());
            const auto close = text.rfind(')');  // the command name may hold spaces
            if (close == std::string::npos) return -1.0;
            std::istringstream fields(text.substr(close + 2));
            std::string field;
            double ticks = 0.0;
            for (int i = 3; i <= 15 && fields >> field; ++i) {
                if (i == 14 || i == 15)
                    ticks += std::strtod(field.c_str(), nullptr);  // utime, stime
            }
            return ticks * 1000.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
        }
        return -1.0;
    }

    void check_alive() {
        for (auto& c : children_) {
            if (!c->running())
                throw std::runtime_error(c->name() +
                                         " exited: " + c->stderr_text().substr(0, 2000));
        }
    }

private:
    ChildProcess& spawn(const std::string& name, std::vector<std::string> argv) {
        children_.push_back(std::make_unique<ChildProcess>(name, std::move(argv), dir_));
        return *children_.back();
    }
    void worker(const std::string& name, std::vector<std::string> args) {
        std::vector<std::string> argv = {GLASSBOX_BINARY, "worker"};
        argv.insert(argv.end(), args.begin(), args.end());
        for (const std::string& a :
             {std::string("--broker"), endpoint_, std::string("--home"), home_.string(),
              std::string("--heartbeat-ms"), std::string("1000")}) {
            argv.push_back(a);
        }
        spawn(name, std::move(argv));
    }
    void wait_for_service(const std::string& service) {
        const auto until = Clock::now() + milliseconds{30'000};
        while (Clock::now() < until) {
            auto r = client_->call("mmi.service", json(service), milliseconds{2000});
            if (r && r->back().body == json(200)) return;
            check_alive();
            std::this_thread::sleep_for(milliseconds{100});
        }
        throw std::runtime_error("service " + service + " never registered");
    }

    fs::path dir_;
    fs::path home_;
    bool collector_ = true;
    std::string endpoint_;
    std::vector<std::unique_ptr<ChildProcess>> children_;
    std::unique_ptr<glassbox::bus::BusClient> client_;
    std::unique_ptr<glassbox::bus::BusClient> query_client_;
};

// ---- one query -------------------------------------------------------------------------------

const std::vector<std::string> kSteps = {"grounding", "exploration", "focus", "synthesis"};

double process_cpu_ms() {
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1000.0 + static_cast<double>(ts.tv_nsec) / 1e6;
}

struct QueryResult {
    double ms = 0.0;
    double client_cpu_ms =
        0.0;  // this process (bus client, its zmq I/O thread, decoding) while waiting
    bool ok = false;
    std::string error;
    std::map<std::string, double> step_ms;  // from gb:durationMs
    std::size_t explain_messages = 0;
    std::size_t explain_triples = 0;
    std::size_t explain_bytes = 0;  // the explain message bodies received
    std::size_t kept_edges = 0;
    double subgraph_edges = 0.0;  // gb:edgeCount of the Exploration step
    std::size_t seeds = 0;        // gb:seedEntity of the Exploration step
    bool answer_in_focus = false;
    bool empty_answer = true;
};

std::string iri_of(const schema::Term& term) {
    return term.is_iri() ? term.as_iri().value : std::string{};
}

QueryResult run_query(glassbox::bus::BusClient& client, const std::string& service,
                      const std::string& collection, const Question& q) {
    schema::GraphRagQuery query;
    query.query = q.text;
    query.collection = collection;
    QueryResult out;
    const double cpu_start = process_cpu_ms();
    const auto start = Clock::now();
    auto sent = client.send(service, schema::encode(query), milliseconds{60'000});
    if (!sent) {
        out.error = sent.error().message;
        return out;
    }
    std::vector<std::string> explain_texts;
    while (true) {
        auto reply = client.next(*sent, milliseconds{70'000});
        if (!reply) {
            out.error = reply.error().message;
            return out;
        }
        if (reply->kind == glassbox::bus::ReplyKind::kExplain) {
            explain_texts.push_back(std::move(reply->text));  // decoded after the clock stops
            continue;
        }
        if (reply->kind == glassbox::bus::ReplyKind::kError) {
            out.ms = ms_since(start);
            out.error = reply->error ? std::string(base::to_string(reply->error->type)) + ": " +
                                           reply->error->message
                                     : "error";
            return out;
        }
        if (reply->kind == glassbox::bus::ReplyKind::kFinal) {
            auto response = schema::decode_text<schema::RagResponse>(reply->text);
            out.ms = ms_since(start);
            out.client_cpu_ms = process_cpu_ms() - cpu_start;
            if (!response) {
                out.error = "final reply: " + response.error().message;
                return out;
            }
            out.ok = true;
            out.empty_answer = response->response.empty();
            break;
        }
    }
    // Everything below happens after the clock stopped.
    std::vector<schema::ExplainMessage> explains;
    for (const auto& text : explain_texts) {
        auto message = schema::decode_body<schema::ExplainMessage>(text);
        if (!message) {
            out.ok = false;
            out.error = "explain message: " + message.error().message;
            return out;
        }
        explains.push_back(std::move(message).value());
    }
    out.explain_messages = explains.size();
    for (const auto& text : explain_texts) out.explain_bytes += text.size();
    std::map<std::string, std::pair<std::string, std::string>>
        edges;  // selection -> (subject, object)
    const auto number = [](const schema::Term& o) {
        return o.is_literal() ? std::strtod(o.as_literal().value.c_str(), nullptr) : 0.0;
    };
    for (const auto& m : explains) {
        out.explain_triples += m.explain_triples.size();
        for (const auto& t : m.explain_triples) {
            const std::string s = iri_of(t.s);
            const std::string p = iri_of(t.p);
            if (p == vocab::kDurationMs) {
                const auto colon = s.rfind(':');
                const std::string step = colon == std::string::npos ? s : s.substr(colon + 1);
                if (std::find(kSteps.begin(), kSteps.end(), step) != kSteps.end() &&
                    t.o.is_literal()) {
                    out.step_ms[step] = number(t.o);
                }
            } else if (p == vocab::kEdgeCount && s.size() > 12 && s.ends_with(":exploration")) {
                out.subgraph_edges = number(t.o);
            } else if (p == vocab::kSeedEntity) {
                ++out.seeds;
            } else if (p == vocab::kRdfSubject) {
                edges[s].first = iri_of(t.o);
            } else if (p == vocab::kRdfObject) {
                edges[s].second = iri_of(t.o);
            }
        }
    }
    out.kept_edges = edges.size();
    for (const auto& [selection, so] : edges) {
        if (!q.answer.empty() && (so.first == q.answer || so.second == q.answer))
            out.answer_in_focus = true;
    }
    return out;
}

// ---- one size ----------------------------------------------------------------------------------

struct SizeFigures {
    std::size_t target = 0;
    std::size_t triples = 0;
    std::uint64_t quads = 0;
    double generate_s = 0.0;
    double load_s = -1.0;  // -1: reused
    std::vector<double> with_explain, without_explain;
    std::vector<double> paired_ratio;  // with / without, per question answered by both
    std::map<std::string, std::vector<double>> steps;
    std::vector<double> explain_messages, explain_triples, explain_kib, kept_edges, subgraph_edges,
        seeds;
    std::size_t errors_with = 0, errors_without = 0, empty_answers = 0;
    std::size_t answerable = 0, answer_in_focus = 0;
    std::vector<std::string> error_samples;
    long store_rss_kb = -1;
    std::map<std::string, double>
        cpu_ms_per_query;  // process -> CPU ms per query of the measured phase
    std::vector<double> client_cpu_with, client_cpu_without;
};

// The processes whose CPU time is attributed per query, and how many queries each served: the
// two graph-rag workers one variant each, the collector only explain traces, the rest both.
const std::vector<std::string> kCpuProcesses = {
    "graph-rag", "graph-rag-noexplain", "broker", "trace-collector", "store", "llm", "embeddings"};

SizeFigures bench_size(Pipeline& pipeline, const Options& o, std::size_t target) {
    SizeFigures f;
    f.target = target;
    const std::string collection = "bench-kg-" + size_name(target);
    auto start = Clock::now();
    const Graph g = generate(target, 20261124 + target);
    f.triples = g.triples;
    const auto questions = make_questions(g, o.queries + o.warmup, 77 + target);
    const auto expected = pipeline.quads(collection);
    if (expected && *expected == g.triples) {
        f.generate_s = ms_since(start) / 1000.0;
        std::cerr << "bench_rag: " << collection << " already holds " << *expected
                  << " quads; not loading again\n";
    } else {
        const fs::path file = o.dir / ("kg-" + size_name(target) + ".nt");
        write_ntriples(g, file);
        f.generate_s = ms_since(start) / 1000.0;
        std::cerr << "bench_rag: loading " << g.triples << " triples (" << g.labels.size()
                  << " entities) into " << collection << "\n";
        f.load_s = pipeline.load(file, collection);
        std::cerr << "bench_rag: loaded in " << fmt(f.load_s, 1) << " s\n";
    }
    f.quads = pipeline.quads(collection).value_or(0);

    auto& client = pipeline.query_client();
    for (std::size_t i = 0; i < o.warmup; ++i) {
        (void)run_query(client, "graph-rag", collection, questions[i]);
        (void)run_query(client, kNoExplainService, collection, questions[i]);
    }
    std::map<std::string, double> cpu_before;
    for (const auto& name : kCpuProcesses) cpu_before[name] = pipeline.cpu_ms(name);
    for (std::size_t i = o.warmup; i < questions.size(); ++i) {
        const auto& q = questions[i];
        // Alternate which worker goes first, so neither always meets the warmer store cache.
        QueryResult with, without;
        if (i % 2 == 0) {
            with = run_query(client, "graph-rag", collection, q);
            without = run_query(client, kNoExplainService, collection, q);
        } else {
            without = run_query(client, kNoExplainService, collection, q);
            with = run_query(client, "graph-rag", collection, q);
        }
        if (with.ok) {
            f.with_explain.push_back(with.ms);
            for (const auto& [step, ms] : with.step_ms) f.steps[step].push_back(ms);
            f.explain_messages.push_back(static_cast<double>(with.explain_messages));
            f.client_cpu_with.push_back(with.client_cpu_ms);
            f.explain_triples.push_back(static_cast<double>(with.explain_triples));
            f.explain_kib.push_back(static_cast<double>(with.explain_bytes) / 1024.0);
            f.kept_edges.push_back(static_cast<double>(with.kept_edges));
            f.subgraph_edges.push_back(with.subgraph_edges);
            f.seeds.push_back(static_cast<double>(with.seeds));
            if (with.empty_answer) ++f.empty_answers;
            if (!q.answer.empty()) {
                ++f.answerable;
                if (with.answer_in_focus) ++f.answer_in_focus;
            }
        } else {
            ++f.errors_with;
            if (f.error_samples.size() < 3) f.error_samples.push_back("graph-rag: " + with.error);
        }
        if (with.ok && without.ok && without.ms > 0) f.paired_ratio.push_back(with.ms / without.ms);
        if (without.ok) {
            f.without_explain.push_back(without.ms);
            f.client_cpu_without.push_back(without.client_cpu_ms);
        } else {
            ++f.errors_without;
            if (f.error_samples.size() < 3)
                f.error_samples.push_back(kNoExplainService + ": " + without.error);
        }
        if ((i - o.warmup + 1) % 50 == 0) {
            std::cerr << "bench_rag: " << collection << " " << (i - o.warmup + 1) << "/"
                      << o.queries << " queries\n";
        }
    }
    for (const auto& name : kCpuProcesses) {
        if (cpu_before[name] < 0) continue;  // not running (--no-collector)
        const bool one_variant =
            name == "graph-rag" || name == "graph-rag-noexplain" || name == "trace-collector";
        const double served = static_cast<double>(o.queries) * (one_variant ? 1.0 : 2.0);
        f.cpu_ms_per_query[name] = (pipeline.cpu_ms(name) - cpu_before[name]) / served;
    }
    f.store_rss_kb = pipeline.rss_kb("store");
    pipeline.check_alive();
    return f;
}

void report(const std::vector<SizeFigures>& all, const Options& o, const std::string& started,
            const std::string& load_at_start, std::ostream& out) {
    out << "\n## graph-rag latency (bench_rag)\n\n";
    out << "Run " << started << " – " << utc_now() << ", commit `"
        << git_commit(GLASSBOX_SOURCE_DIR) << "`, load average (1/5/15 min) " << load_at_start
        << " at the start, " << load_average() << " at the end on "
        << std::thread::hardware_concurrency() << " CPUs. " << o.queries
        << " generated questions per size (after " << o.warmup
        << " warm-up), one in flight, each sent to both workers (alternating which goes first). "
           "Extractive model, "
           "feature-hashing embeddings, default graph-rag parameters"
        << (o.collector ? std::string(", trace collector running")
                        : std::string(", **no trace collector** (--no-collector)"))
        << ". Times in ms, end to end through the bus (client send to FINAL; the client receives "
           "every explain "
           "message on the clock and decodes them after it).\n\n";
    out << "| graph | triples | load s | e2e p50 | e2e p90 | e2e p99 | no-explain p50 | no-explain "
           "p99 | explain overhead (p50) | "
           "paired overhead (median) | explain msgs | explain triples | explain KiB | seeds | "
           "subgraph edges | kept edges | answer in focus | "
           "errors |\n";
    out << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|--"
           "-:|\n";
    for (const auto& f : all) {
        const double p50 = percentile(f.with_explain, 0.5);
        const double q50 = percentile(f.without_explain, 0.5);
        out << "| " << size_name(f.target) << " | " << with_thousands(f.quads) << " | "
            << (f.load_s < 0 ? std::string("reused") : fmt(f.load_s, 1)) << " | " << fmt(p50, 1)
            << " | " << fmt(percentile(f.with_explain, 0.9), 1) << " | "
            << fmt(percentile(f.with_explain, 0.99), 1) << " | " << fmt(q50, 1) << " | "
            << fmt(percentile(f.without_explain, 0.99), 1) << " | "
            << (q50 > 0 ? fmt(100.0 * (p50 / q50 - 1.0), 1) + " %" : std::string("n/a")) << " | "
            << (f.paired_ratio.empty()
                    ? std::string("n/a")
                    : fmt(100.0 * (percentile(f.paired_ratio, 0.5) - 1.0), 1) + " %")
            << " | " << fmt(percentile(f.explain_messages, 0.5), 0) << " | "
            << fmt(percentile(f.explain_triples, 0.5), 0) << " | "
            << fmt(percentile(f.explain_kib, 0.5), 1) << " | " << fmt(percentile(f.seeds, 0.5), 0)
            << " | " << fmt(percentile(f.subgraph_edges, 0.5), 0) << " | "
            << fmt(percentile(f.kept_edges, 0.5), 0) << " | "
            << (f.answerable ? fmt(100.0 * static_cast<double>(f.answer_in_focus) /
                                       static_cast<double>(f.answerable),
                                   0) +
                                   " %"
                             : std::string("n/a"))
            << " | " << f.errors_with << " + " << f.errors_without << " |\n";
    }
    out << "\nTime per step (gb:durationMs in the explain triples; p50 / p99 ms), and what the "
           "steps leave out of the "
           "end-to-end p50:\n\n";
    out << "| graph |";
    for (const auto& s : kSteps) out << ' ' << s << " |";
    out << " sum of step p50s | e2e p50 − sum |\n|---|";
    for (std::size_t i = 0; i < kSteps.size(); ++i) out << "---:|";
    out << "---:|---:|\n";
    for (const auto& f : all) {
        out << "| " << size_name(f.target) << " |";
        double sum = 0.0;
        for (const auto& s : kSteps) {
            const auto it = f.steps.find(s);
            if (it == f.steps.end() || it->second.empty()) {
                out << " – |";
                continue;
            }
            const double p50 = percentile(it->second, 0.5);
            sum += p50;
            out << ' ' << fmt(p50, 1) << " / " << fmt(percentile(it->second, 0.99), 1) << " |";
        }
        out << ' ' << fmt(sum, 1) << " | " << fmt(percentile(f.with_explain, 0.5) - sum, 1)
            << " |\n";
    }
    out << "\nCPU time per query during the measured queries (user + system, /proc/<pid>/stat; "
           "graph-rag and the "
           "collector served the explain variant only, graph-rag-noexplain the other, the rest "
           "both, so theirs is per "
           "query of either kind):\n\n| graph |";
    for (const auto& name : kCpuProcesses) out << ' ' << name << " |";
    out << " bench client, explain | bench client, no explain |\n|---|";
    for (std::size_t i = 0; i < kCpuProcesses.size() + 2; ++i) out << "---:|";
    out << '\n';
    for (const auto& f : all) {
        out << "| " << size_name(f.target) << " |";
        for (const auto& name : kCpuProcesses) {
            const auto it = f.cpu_ms_per_query.find(name);
            out << ' ' << (it == f.cpu_ms_per_query.end() ? std::string("–") : fmt(it->second, 2))
                << " |";
        }
        const auto mean = [](const std::vector<double>& v) {
            double sum = 0.0;
            for (double x : v) sum += x;
            return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
        };
        out << ' ' << fmt(mean(f.client_cpu_with), 2) << " | " << fmt(mean(f.client_cpu_without), 2)
            << " |\n";
    }
    for (const auto& f : all) {
        for (const auto& e : f.error_samples)
            out << "\n- " << size_name(f.target) << " error: " << e;
        if (f.empty_answers > 0)
            out << "\n- " << size_name(f.target) << ": " << f.empty_answers << " empty answers";
    }
    out << "\n\n### Targets\n\n| target | result |\n|---|---|\n";
    const SizeFigures* small = nullptr;
    const SizeFigures* mid = nullptr;
    const SizeFigures* big = nullptr;
    for (const auto& f : all) {
        if (f.target == 10'000) small = &f;
        if (f.target == 100'000) mid = &f;
        if (f.target == 1'000'000) big = &f;
    }
    const auto verdict = [](bool met) {
        return met ? std::string("met") : std::string("**missed**");
    };
    if (mid) {
        const double p50 = percentile(mid->with_explain, 0.5);
        out << "| p50 ≤ 20 ms at 100k triples | " << verdict(p50 <= 20.0) << " (" << fmt(p50, 1)
            << " ms) |\n";
    }
    if (small && big) {
        const double ratio =
            percentile(big->with_explain, 0.5) / percentile(small->with_explain, 0.5);
        out << "| p50 at 1M ≤ 2× p50 at 10k | " << verdict(ratio <= 2.0) << " (" << fmt(ratio, 2)
            << "×) |\n";
    }
    for (const auto& f : all) {
        const double p50 = percentile(f.with_explain, 0.5);
        const double q50 = percentile(f.without_explain, 0.5);
        if (q50 <= 0 || f.paired_ratio.empty()) continue;
        const double overhead = p50 / q50 - 1.0;
        const double paired = percentile(f.paired_ratio, 0.5) - 1.0;
        out << "| explain overhead ≤ 5 % (" << size_name(f.target) << ") | "
            << verdict(std::max(overhead, paired) <= 0.05) << " (p50 ratio "
            << fmt(100.0 * overhead, 1) << " %, paired median " << fmt(100.0 * paired, 1)
            << " %) |\n";
    }
    out.flush();
}

json to_json(const SizeFigures& f) {
    json steps = json::object();
    for (const auto& [name, v] : f.steps)
        steps[name] = {{"p50", percentile(v, 0.5)}, {"p99", percentile(v, 0.99)}};
    return {
        {"target", f.target},
        {"quads", f.quads},
        {"load_s", f.load_s},
        {"p50", percentile(f.with_explain, 0.5)},
        {"p90", percentile(f.with_explain, 0.9)},
        {"p99", percentile(f.with_explain, 0.99)},
        {"no_explain_p50", percentile(f.without_explain, 0.5)},
        {"no_explain_p99", percentile(f.without_explain, 0.99)},
        {"paired_overhead", f.paired_ratio.empty() ? 0.0 : percentile(f.paired_ratio, 0.5) - 1.0},
        {"explain_kib_p50", percentile(f.explain_kib, 0.5)},
        {"steps", steps},
        {"errors", f.errors_with + f.errors_without},
        {"answer_in_focus",
         f.answerable ? static_cast<double>(f.answer_in_focus) / static_cast<double>(f.answerable)
                      : 0.0},
        {"with_explain_ms", f.with_explain},
        {"without_explain_ms", f.without_explain},
        {"store_rss_kb", f.store_rss_kb},
        {"cpu_ms_per_query", f.cpu_ms_per_query}};
}

// --generate-only: writes the graph and its questions to --dir and prints its degree profile.
void describe_graph(const Options& o, std::size_t target, std::ostream& out) {
    const Graph g = generate(target, 20261124 + target);
    const fs::path file = o.dir / ("kg-" + size_name(target) + ".nt");
    write_ntriples(g, file);
    std::vector<double> degree(g.labels.size(), 1.0);  // the rdf:type edge
    for (const auto& f : g.facts) {
        degree[f.s] += 1.0;
        if (!literal_relation(f.p)) degree[f.o] += 1.0;
    }
    out << size_name(target) << ": " << g.triples << " triples, " << g.labels.size()
        << " entities, " << g.facts.size() << " facts; entity degree p50 "
        << percentile(degree, 0.5) << ", p90 " << percentile(degree, 0.9) << ", p99 "
        << percentile(degree, 0.99) << ", max " << percentile(degree, 1.0) << "; " << file.string()
        << "\n";
    std::ofstream questions(o.dir / ("questions-" + size_name(target) + ".txt"), std::ios::trunc);
    for (const auto& q : make_questions(g, o.queries + o.warmup, 77 + target)) {
        questions << q.hops << '\t' << q.text << '\t' << q.answer << '\n';
    }
}

// Every size on one pipeline in `dir`: its figures.
std::vector<SizeFigures> bench_pipeline(const Options& o, const fs::path& dir) {
    fs::create_directories(dir);
    Pipeline pipeline(dir, o.collector);
    pipeline.start();
    std::vector<SizeFigures> all;
    for (const auto size : o.sizes) {
        all.push_back(bench_size(pipeline, o, size));
        const auto& f = all.back();
        std::cerr << "bench_rag: " << size_name(size) << ": p50 "
                  << fmt(percentile(f.with_explain, 0.5), 1) << " ms, no-explain p50 "
                  << fmt(percentile(f.without_explain, 0.5), 1) << " ms\n";
    }
    return all;
}

// --backends: the same sizes and questions on SQLite, then on PostgreSQL; each backend's report,
// then the comparison.
void bench_backends(const Options& o, const std::string& started, const std::string& load_at_start,
                    std::ostream& out) {
    if (auto why = integration::PostgresServer::unavailable())
        throw std::runtime_error("--backends: " + *why);
    const auto sqlite = bench_pipeline(o, o.dir / "sqlite");
    std::vector<SizeFigures> postgres;
    {
        integration::PostgresServer::Options server_options;
        server_options.durable = true;
        integration::PostgresServer server(server_options);
        server.create_database("glassbox");
        // The pipeline's processes inherit it: both stores keep their state there.
        const integration::PostgresStorageEnv env(server.dsn("glassbox"));
        postgres = bench_pipeline(o, o.dir / "postgres");
    }
    out << "\n# SQLite\n";
    report(sqlite, o, started, load_at_start, out);
    out << "\n# PostgreSQL\n";
    report(postgres, o, started, load_at_start, out);
    out << "\n## Backends (bench_rag --backends)\n\n| size | graph-rag p50 SQLite ms | p50 "
           "PostgreSQL ms | PostgreSQL / SQLite | load SQLite s | load PostgreSQL s | load rate "
           "PostgreSQL / SQLite |\n|---|---:|---:|---:|---:|---:|---:|\n";
    for (std::size_t i = 0; i < sqlite.size() && i < postgres.size(); ++i) {
        const double lite = percentile(sqlite[i].with_explain, 0.5);
        const double pg = percentile(postgres[i].with_explain, 0.5);
        const bool loaded = sqlite[i].load_s > 0 && postgres[i].load_s > 0;
        out << "| " << size_name(sqlite[i].target) << " | " << fmt(lite, 2) << " | " << fmt(pg, 2)
            << " | " << fmt(pg / std::max(lite, 1e-9), 2) << " | "
            << (loaded ? fmt(sqlite[i].load_s, 2) : "reused") << " | "
            << (loaded ? fmt(postgres[i].load_s, 2) : "reused") << " | "
            << (loaded ? fmt(sqlite[i].load_s / postgres[i].load_s, 2) : "–") << " |\n";
    }
    out << "\nTargets: graph-rag p50 at 100k on PostgreSQL <= 1.5x SQLite's; RDF load rate on "
           "PostgreSQL >= 0.5x SQLite's.\n";
}

void usage() {
    std::cerr << "usage: bench_rag [--quick] [--sizes N,N,...] [--queries N] [--warmup N] [--dir "
                 "DIR] [--json FILE]\n"
                 "                 [--no-collector] [--generate-only] [--backends]\n";
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    bool queries_given = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto next = [&] { return option_value(argc, argv, i, usage); };
        try {
            if (arg == "--quick") {
                o.sizes = {10'000, 100'000};
                if (!queries_given) o.queries = 200;
            } else if (arg == "--sizes") {
                o.sizes.clear();
                std::stringstream list(next());
                std::string item;
                while (std::getline(list, item, ',')) o.sizes.push_back(std::stoul(item));
            } else if (arg == "--queries") {
                o.queries = std::stoul(next());
                queries_given = true;
            } else if (arg == "--warmup") {
                o.warmup = std::stoul(next());
            } else if (arg == "--dir") {
                o.dir = next();
            } else if (arg == "--json") {
                o.json_path = next();
            } else if (arg == "--no-collector") {
                o.collector = false;
            } else if (arg == "--backends") {
                o.backends = true;
            } else if (arg == "--generate-only") {
                o.generate_only = true;
            } else {
                usage();
                return 2;
            }
        } catch (const std::exception&) {
            usage();
            return 2;
        }
    }
    if (o.queries == 0 || o.sizes.empty()) {
        usage();
        return 2;
    }
    std::optional<integration::TempDir> tmp;
    if (o.dir.empty()) o.dir = tmp.emplace("bench-rag").path();
    fs::create_directories(o.dir);
    const std::string started = utc_now();
    const std::string load_at_start = load_average();
    if (o.generate_only) {
        for (const auto size : o.sizes) describe_graph(o, size, std::cout);
        return 0;
    }
    try {
        std::cout << "# bench_rag (dir " << o.dir.string() << ")\n";
        if (o.backends) {
            bench_backends(o, started, load_at_start, std::cout);
            return 0;
        }
        const auto all = bench_pipeline(o, o.dir);
        report(all, o, started, load_at_start, std::cout);
        if (!o.json_path.empty()) {
            json out = {{"started", started},
                        {"commit", git_commit(GLASSBOX_SOURCE_DIR)},
                        {"sizes", json::array()}};
            for (const auto& f : all) out["sizes"].push_back(to_json(f));
            std::ofstream(o.json_path) << out.dump(1) << '\n';
        }
    } catch (const std::exception& e) {
        std::cerr << "bench_rag: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
