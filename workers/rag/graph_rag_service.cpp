// Graph RAG: concepts → seed entities → batched traversal → pre-filter → LLM scoring and
// reasoning → source tracing → streamed synthesis with citations, each step explained.
#include "workers/rag/graph_rag_service.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "base/ascii.hpp"
#include "schema/explain_builder.hpp"
#include "schema/fact_citation.hpp"
#include "schema/json_fast.hpp"
#include "schema/services.hpp"
#include "schema/vocabulary.hpp"
#include "text/similarity.hpp"
#include "workers/rag/answer_evidence.hpp"
#include "workers/rag/rag_answer.hpp"
#include "workers/rag/rag_steps.hpp"

namespace glassbox::rag {
namespace {

using base::ErrorType;
using base::make_error;
using nlohmann::json;
using schema::Term;
using schema::Triple;
namespace explain = schema::explain;

// Seeds: an entity is kept when its similarity is at least this share of its concept's best
// match, and at least kSeedFloor of the best match of any concept. An entity the question
// names matches its label at about 1.0 while the nearest unrelated labels score 0.3-0.7, so
// the relative cut keeps the named entities and drops look-alikes that would fill the
// subgraph with unrelated edges; a concept with no close match keeps its nearest entities.
constexpr double kSeedRelative = 0.8;
constexpr double kSeedFloor = 0.6;
// Pre-filter bonus per further concept an edge's two ends are linked to: an edge between
// what two concepts reach (a conjunction: "a Forward at FC Porto") outranks one concept's edges.
constexpr double kConjunctionBonus = 0.25;
// Only concepts that name an entity (best match at least this similar) count for the bonus:
// the look-alike seeds of a generic concept ("plays") link to everything.
constexpr double kNamedMatch = 0.9;
// Pre-filter penalty of an edge found by a pattern that filled triple_limit: one of a hub's
// many alike edges ("X gender male"), whose text resembles the question only through names.
constexpr double kHubPenalty = 0.2;
// Kept edges: at most this share of edge_limit may share one node and predicate (a star of
// alike facts) while other scored edges wait; the rest of the slots go to the best of those.
constexpr std::uint32_t kStarShare = 3;
// Pre-filter penalty per hop beyond the second: the third hop (for questions that chain three
// relations) widens the subgraph several times over; its edges compete for the scored slots only
// when they resemble the question clearly.
constexpr double kDeepHopPenalty = 0.15;
// Pre-filter: at most this share of edge_score_limit may share one node and predicate.
constexpr std::uint32_t kPrefilterStarShare = 6;
// The same two shares for a question asking for a list ("who are the children of X"): its
// answers are one star, and each one left out is an answer missing.
constexpr std::uint32_t kListStarShare = 2;
// Traversal: rows asked of each pattern beyond its share of a hop's room (rows_to_ask).
constexpr std::size_t kRowsMargin = 4;

struct Seed {
    Term entity;
    double score = 0.0;
    std::size_t concept_index = 0;
};

// A term's number within one run (TermIds).
using TermId = std::uint32_t;

// The numbers of an edge's subject, predicate and object.
struct EdgeIds {
    TermId s = 0;
    TermId p = 0;
    TermId o = 0;
    bool operator==(const EdgeIds&) const = default;
};

struct EdgeIdsHash {
    std::size_t operator()(const EdgeIds& e) const noexcept {
        const std::uint64_t h = ((std::uint64_t{e.s} << 32) | e.o) * 0x9E3779B97F4A7C15ULL;
        return static_cast<std::size_t>(h ^ (std::uint64_t{e.p} * 0xC2B2AE3D27D4EB4FULL));
    }
};

// Each distinct term of a run numbered once, so the traversal's sets, the reach of each node,
// the labels request and the star caps work on numbers, not on a string built per term and
// lookup. Terms are told apart by kind and content (a literal's xsd:string written or not alike,
// as in N-Triples).
class TermIds {
public:
    TermId id(const Term& term) {
        key_.clear();
        append_key(key_, term);
        return ids_.try_emplace(key_, static_cast<TermId>(ids_.size())).first->second;
    }
    std::size_t size() const noexcept { return ids_.size(); }

private:
    static void append_sized(std::string& out, std::string_view part) {
        const auto size = static_cast<std::uint32_t>(part.size());
        for (int shift = 0; shift < 32; shift += 8)
            out += static_cast<char>((size >> shift) & 0xFF);
        out += part;
    }
    // An injective key: the kind, then the parts (all but the last with their size).
    static void append_key(std::string& out, const Term& term) {
        switch (term.kind()) {
            case Term::Kind::kIri:
                out += 'i';
                out += term.as_iri().value;
                break;
            case Term::Kind::kBlankNode:
                out += 'b';
                out += term.as_blank().id;
                break;
            case Term::Kind::kLiteral: {
                const auto& lit = term.as_literal();
                out += 'l';
                append_sized(
                    out, lit.datatype == schema::kXsdString ? std::string_view() : lit.datatype);
                append_sized(out, lit.language);
                out += lit.value;
                break;
            }
            case Term::Kind::kTriple: {
                const Triple& t = term.as_triple();
                out += 't';
                for (const Term* part : {&t.s, &t.p}) {
                    std::string inner;
                    append_key(inner, *part);
                    append_sized(out, inner);
                }
                append_key(out, t.o);
                break;
            }
        }
    }

    std::unordered_map<std::string, TermId> ids_;
    std::string key_;  // reused: a term seen before costs no allocation
};

// `values`[id], grown as needed.
template <typename T>
T& at_id(std::vector<T>& values, TermId id) {
    if (id >= values.size()) values.resize(std::size_t{id} + 1);
    return values[id];
}

struct FoundEdge {
    Triple triple;
    EdgeIds ids;
    std::size_t concept_index = 0;  // the concept whose seed the traversal started from
    std::uint32_t hop = 1;
    bool from_hub = false;  // found by a pattern that filled triple_limit
};

struct FrontierNode {
    Term node;
    std::size_t concept_index = 0;
    bool specific = true;  // not reached through a pattern that filled its limit
};

struct KeptEdge {
    std::size_t found = 0;  // index into the subgraph
    double score = 0.0;
    std::string reasoning;
    std::vector<schema::FactSource> sources;
};

// At most `limit` of `ranked`, in order, no more than `cap` of them sharing a subject and
// predicate or a predicate and object while others wait; the slots left go to the best of those
// waiting. (A star of alike facts cannot take every slot.)
template <typename Item, typename IdsOf>
std::vector<Item> cap_stars(const std::vector<Item>& ranked, std::size_t limit, std::size_t cap,
                            IdsOf ids_of) {
    const auto pair = [](TermId a, TermId b) { return (std::uint64_t{a} << 32) | b; };
    std::unordered_map<std::uint64_t, std::size_t> out_stars;  // subject and predicate
    std::unordered_map<std::uint64_t, std::size_t> in_stars;   // predicate and object
    std::vector<Item> kept;
    std::vector<Item> waiting;
    for (const auto& item : ranked) {
        const EdgeIds& t = ids_of(item);
        auto& out_star = out_stars[pair(t.s, t.p)];
        auto& in_star = in_stars[pair(t.p, t.o)];
        if (kept.size() < limit && out_star < cap && in_star < cap) {
            ++out_star;
            ++in_star;
            kept.push_back(item);
        } else {
            waiting.push_back(item);
        }
    }
    for (const auto& item : waiting) {
        if (kept.size() >= limit) break;
        kept.push_back(item);
    }
    return kept;
}

// An edge as the fact it states: an inverse edge ("Y plays for country inverse X", the
// predicate's label ending in " inverse") read the right way round ("X plays for country Y").
struct FactReading {
    std::string_view s;
    std::string_view p;
    std::string_view o;
};

FactReading fact_reading(const LabelledEdge& e) {
    std::string_view p = e.p;
    for (std::string_view suffix : {std::string_view(" inverse"), std::string_view("_inverse")}) {
        if (p.size() > suffix.size() && p.ends_with(suffix)) {
            p.remove_suffix(suffix.size());
            return {e.o, p, e.s};
        }
    }
    return {e.s, p, e.o};
}

bool expandable(const Term& term) { return term.is_iri() || term.is_blank(); }

// Identifier-style text ("Cruz_Azul_FC") reads as words to the embedder and the labels.
std::string concept_text(std::string text) {
    std::replace(text.begin(), text.end(), '_', ' ');
    return text;
}

// {"id": score} of a kg-edge-scoring reply (scores clamped to [0, 1]).
std::unordered_map<std::string, double> scores_of(const schema::LlmResponse& response) {
    std::unordered_map<std::string, double> scores;
    if (!response.json || !response.json->is_object()) return scores;
    const auto list = response.json->find("scores");
    if (list == response.json->end() || !list->is_array()) return scores;
    for (const auto& item : *list) {
        if (!item.is_object()) continue;
        const auto id = item.find("id");
        const auto score = item.find("score");
        if (id == item.end() || !id->is_string() || score == item.end() || !score->is_number())
            continue;
        scores.emplace(id->get<std::string>(), std::clamp(score->get<double>(), 0.0, 1.0));
    }
    return scores;
}

std::unordered_map<std::string, std::string> reasons_of(const schema::LlmResponse& response) {
    std::unordered_map<std::string, std::string> reasons;
    if (!response.json || !response.json->is_object()) return reasons;
    const auto list = response.json->find("reasons");
    if (list == response.json->end() || !list->is_array()) return reasons;
    for (const auto& item : *list) {
        if (!item.is_object()) continue;
        const auto id = item.find("id");
        const auto text = item.find("reasoning");
        if (id == item.end() || !id->is_string() || text == item.end() || !text->is_string())
            continue;
        reasons.emplace(id->get<std::string>(), text->get<std::string>());
    }
    return reasons;
}

std::string json_array(const std::vector<std::string>& items) { return schema::dump(json(items)); }

// One graph-RAG run.
class GraphRagRun : public RagRun {
public:
    GraphRagRun(runtime::RequestContext& context, const RagConfig& config,
                BuiltinEmbeddings* builtin_embeddings)
        : RagRun(context, config, schema::services::kGraphRag) {
        builtin_embeddings_ = builtin_embeddings;
    }

    void run() { run_request(query_, &resolve_graph_query); }

private:
    // ---- Grounding: distinct concepts (the seeds come from them: with none, the question) ----
    std::vector<std::string> concepts_in(const schema::LlmResponse& extracted) const override {
        auto concepts = concepts_of(extracted, ConceptRepeats::kDrop);
        if (concepts.empty()) concepts.push_back(query_.query);
        return concepts;
    }

    // ---- Exploration: seeds per concept, one triples-batch per hop ---------------------------
    base::Result<void> exploration() override {
        StepTimer timer;
        list_ = reasoner::question_expectation(query_.query).list;
        std::vector<std::string> texts;
        for (const auto& c : concepts_) texts.push_back(concept_text(c));
        auto embedded = calls_->embed_recorded(texts);
        if (!embedded) return embedded.error();
        if (embedded->call) timer.add(*embedded->call);
        const auto& vectors = embedded->vectors;

        // entity_limit is shared: each concept gets its part (at least one).
        const auto share = std::max<std::uint32_t>(
            1, query_.entity_limit / static_cast<std::uint32_t>(concepts_.size()));
        std::vector<Seed> candidates;
        double best_overall = 0.0;
        auto per_concept = calls_->entities(vectors, share);
        if (!per_concept) return per_concept.error();
        for (std::size_t c = 0; c < concepts_.size() && c < per_concept->size(); ++c) {
            auto& matches = (*per_concept)[c];
            double best = 0.0;
            for (const auto& m : matches) best = std::max(best, m.score);
            best_overall = std::max(best_overall, best);
            if (best >= kNamedMatch) named_concepts_ |= concept_bit(c);
            for (auto& m : matches) {
                if (m.score >= kSeedRelative * best)
                    candidates.push_back(Seed{std::move(m.entity), m.score, c});
            }
        }
        if (candidates.empty()) {
            return make_error(ErrorType::kNotFound,
                              "collection \"" + collection_name() +
                                  "\" has no indexed entities: load and index knowledge first");
        }
        std::stable_sort(candidates.begin(), candidates.end(),
                         [](const Seed& a, const Seed& b) { return a.score > b.score; });
        std::unordered_set<TermId> seeded;
        for (auto& s : candidates) {
            if (seeds_.size() >= query_.entity_limit) break;
            if (s.score < kSeedFloor * best_overall || !seeded.insert(terms_.id(s.entity)).second)
                continue;
            seeds_.push_back(std::move(s));
        }
        if (auto r = traverse(); !r) return r;

        std::vector<std::string> seed_uris;
        for (const auto& s : seeds_) {
            if (s.entity.is_iri()) seed_uris.push_back(s.entity.as_iri().value);
        }
        // The explored edges in traversal order, as many as the trace records (the count is
        // the whole subgraph's), read from the subgraph itself when the step is built.
        const std::size_t recorded =
            std::min<std::size_t>(config_.explored_edges_recorded, explain::kMaxExploredEdges);
        return send_step(
            trace_.run().exploration(),
            [run = trace_.run(), info = timer.info(trace_.run().grounding()),
             seed_uris = std::move(seed_uris), recorded,
             found =
                 std::shared_ptr<const std::vector<FoundEdge>>(found_)](schema::TripleSink& out) {
                std::vector<explain::ExploredEdgeRef> explored;
                explored.reserve(std::min(found->size(), recorded));
                for (const auto& e : *found) {
                    if (explored.size() >= recorded) break;
                    explored.push_back(explain::ExploredEdgeRef{&e.triple, e.hop});
                }
                explain::graph_exploration(out, run, info, seed_uris, found->size(), explored);
            });
    }

    // Breadth-first from the seeds over the default graph: each hop asks, in one request, for
    // the edges out of and into every node of the frontier (triple_limit per pattern), and takes
    // them round-robin across the patterns, so no hub node fills the budget alone.
    base::Result<void> traverse() {
        Walk walk = start_walk();
        for (std::uint32_t hop = 1; hop <= query_.max_path_length && !walk.frontier.empty();
             ++hop) {
            if (subgraph_.size() >= query_.max_subgraph_size) break;
            if (!narrow_frontier(walk.frontier, hop)) break;
            std::size_t first_general = 0;
            const auto patterns = frontier_patterns(walk.frontier, first_general);
            // The labels come with the edges: the focus step asks for none.
            auto matches = calls_->triples_batch(patterns, query_.triple_limit, true,
                                                 rows_to_ask(patterns.size()));
            if (!matches) return matches.error();
            if (auto r = complete_cut_patterns(walk, patterns, *matches, first_general); !r)
                return r;
            if (auto r = check_cancel(); !r) return r;
            if (!matches->labelled) labels_complete_ = false;
            walk.frontier = take_edges(walk, *matches, first_general, hop);
        }
        return {};
    }

    // What the traversal has met: the nodes to expand next, the nodes and the edges reached.
    struct Walk {
        std::vector<FrontierNode> frontier;
        std::vector<char> reached;  // by term id
        std::unordered_set<EdgeIds, EdgeIdsHash> edges;
    };

    // The seeds as the first frontier, and the concepts they reach.
    Walk start_walk() {
        Walk walk;
        for (const auto& s : seeds_) {
            if (expandable(s.entity) && reach_first(walk, terms_.id(s.entity))) {
                walk.frontier.push_back(FrontierNode{s.entity, s.concept_index, true});
            }
        }
        // Which concepts reach each node: a seed its own; both ends of an edge the concept the
        // traversal came from, and the far end's concepts when it is a seed.
        for (const auto& s : seeds_) {
            const TermId id = terms_.id(s.entity);
            at_id(reach_, id) |= concept_bit(s.concept_index);
            at_id(seed_concepts_, id) |= concept_bit(s.concept_index);
        }
        return walk;
    }

    // The frontier nodes hop `hop` expands, in the order they are expanded; false when none.
    bool narrow_frontier(std::vector<FrontierNode>& frontier, std::uint32_t hop) const {
        // Nodes reached through a hub (a pattern that filled triple_limit) are one of many
        // alike and say little about the question: they are expanded after the others.
        std::stable_partition(frontier.begin(), frontier.end(),
                              [](const FrontierNode& n) { return n.specific; });
        // Beyond the second hop only specific nodes are expanded: the neighbours of a hub's
        // many alike neighbours fill the subgraph with strangers' facts.
        if (hop > 2) {
            frontier.erase(std::find_if(frontier.begin(), frontier.end(),
                                        [](const FrontierNode& n) { return !n.specific; }),
                           frontier.end());
            if (frontier.empty()) return false;
        }
        // Round-robin hands out one edge per pattern and round: nodes beyond the remaining
        // budget would get none, so they are not asked for (a smaller reply to decode).
        const std::size_t remaining = query_.max_subgraph_size - subgraph_.size();
        if (frontier.size() > remaining) frontier.resize(remaining);
        return true;
    }

    // Per frontier node, the pattern of the edges out of it and of those into it;
    // `first_general` is the first pattern of a node that is not specific.
    static std::vector<schema::TriplePattern> frontier_patterns(
        const std::vector<FrontierNode>& frontier, std::size_t& first_general) {
        std::vector<schema::TriplePattern> patterns;
        patterns.reserve(frontier.size() * 2);
        first_general = 0;
        for (const auto& n : frontier) {
            patterns.push_back(
                schema::TriplePattern{n.node, std::nullopt, std::nullopt, std::string()});
            patterns.push_back(
                schema::TriplePattern{std::nullopt, std::nullopt, n.node, std::string()});
            if (n.specific) first_general = patterns.size();
        }
        return patterns;
    }

    // The edges of one hop, taken round-robin over the specific nodes' patterns, then over the
    // others', into the subgraph while it has room; the next frontier.
    std::vector<FrontierNode> take_edges(Walk& walk, ServiceCalls::Matches& matches,
                                         std::size_t first_general, std::uint32_t hop) {
        auto& results = matches.results;
        std::vector<FrontierNode> next;
        std::vector<std::size_t> cursor(results.size(), 0);
        round_robin(results.size(), first_general, [&](std::size_t r) {
            // A pattern that filled triple_limit is a hub's: one of many alike edges.
            const bool hub = matches.counts[r] >= query_.triple_limit;
            if (!take_next_edge(walk, r, results[r], cursor[r], hop, hub, next)) return false;
            if (matches.labelled) keep_labels(matches.labels[r], cursor[r] - 1);
            return true;
        });
        return next;
    }

    // Takes the next edge of pattern `r`'s `list` from `cursor` that is new and not a label
    // (`hub`: the pattern filled triple_limit); false when the list has none left.
    bool take_next_edge(Walk& walk, std::size_t r, std::vector<Triple>& list, std::size_t& cursor,
                        std::uint32_t hop, bool hub, std::vector<FrontierNode>& next) {
        const auto ids = next_new_edge(list, cursor, walk.edges);
        if (!ids) return false;
        Triple& t = list[cursor - 1];
        const std::size_t c = walk.frontier[r / 2].concept_index;
        const Term& other = r % 2 == 0 ? t.o : t.s;
        const TermId here = r % 2 == 0 ? ids->s : ids->o;
        const TermId there = r % 2 == 0 ? ids->o : ids->s;
        if (expandable(other) && reach_first(walk, there))
            next.push_back(FrontierNode{other, c, !hub});
        const auto mask = concept_bit(c) | seed_mask(there);
        at_id(reach_, here) |= mask;
        at_id(reach_, there) |= mask;
        t.graph.reset();
        subgraph_.push_back(FoundEdge{std::move(t), *ids, c, hop, hub});
        return true;
    }

    // The labels the store gave with the edge just taken, `index` of its pattern's list (three
    // per triple), kept by term id.
    void keep_labels(std::vector<std::string>& names, std::size_t index) {
        const EdgeIds& ids = subgraph_.back().ids;
        const TermId parts[3] = {ids.s, ids.p, ids.o};
        for (std::size_t k = 0; k < 3; ++k) {
            auto& label = at_id(term_labels_, parts[k]);
            if (!label) label = std::move(names[3 * index + k]);
        }
    }

    // The matches a hop's round-robin can take of one pattern: the remaining room shared by the
    // patterns, plus kRowsMargin for the rows it passes over (labels, edges already met) and
    // for room the patterns with fewer matches leave to the others. A pattern that still runs
    // out while it has more matches is asked again for the rows it needs (complete_cut_patterns):
    // the hop takes the same edges either way, and most replies are several times smaller.
    // nullopt: triple_limit rows leave nothing to save.
    std::optional<std::uint32_t> rows_to_ask(std::size_t patterns) const {
        const std::size_t room = query_.max_subgraph_size - subgraph_.size();
        return rows_with_margin((room + patterns - 1) / patterns);
    }

    // `rows` and kRowsMargin more, nullopt when that reaches triple_limit.
    std::optional<std::uint32_t> rows_with_margin(std::size_t rows) const {
        rows += kRowsMargin;
        if (rows >= query_.triple_limit) return std::nullopt;
        return static_cast<std::uint32_t>(rows);
    }

    // The patterns whose answer the store cut (fewer rows than matches) and that this hop's
    // round-robin would read past their last row (take_edges run on the edges' ids alone),
    // asked again for the rows the round-robin would read of them (kRowsMargin more), until
    // none is left short. Afterwards the hop takes from `matches` exactly what it would take
    // from complete answers.
    base::Result<void> complete_cut_patterns(const Walk& walk,
                                             const std::vector<schema::TriplePattern>& patterns,
                                             ServiceCalls::Matches& matches,
                                             std::size_t first_general) {
        for (;;) {
            const auto [short_ones, rows] = cut_short(walk, matches, first_general);
            if (short_ones.empty()) return {};
            std::vector<schema::TriplePattern> again;
            for (const auto r : short_ones) again.push_back(patterns[r]);
            auto full = calls_->triples_batch(again, query_.triple_limit, matches.labelled,
                                              rows_with_margin(rows));
            if (!full) return full.error();
            if (matches.labelled && !full->labelled) matches.labelled = false;
            for (std::size_t k = 0; k < short_ones.size(); ++k) {
                const auto r = short_ones[k];
                matches.results[r] = std::move(full->results[k]);
                matches.counts[r] = full->counts[k];
                if (matches.labelled) matches.labels[r] = std::move(full->labels[k]);
            }
            if (!matches.labelled) matches.labels.clear();
        }
    }

    // The patterns a round-robin over `matches` reads past the last row of while they have
    // more matches (their count above their rows), in pattern order, and the most rows it would
    // read of one of them: each match not received counted as a new edge taken, the fewest the
    // pattern can need.
    struct ShortPatterns {
        std::vector<std::size_t> patterns;
        std::size_t rows = 0;
    };
    ShortPatterns cut_short(const Walk& walk, const ServiceCalls::Matches& matches,
                            std::size_t first_general) {
        const auto& results = matches.results;
        ShortPatterns short_ones;
        bool cut = false;
        for (std::size_t r = 0; r < results.size(); ++r)
            cut = cut || results[r].size() < matches.counts[r];
        if (!cut) return short_ones;
        auto seen = walk.edges;
        std::vector<std::size_t> cursor(results.size(), 0);
        std::vector<std::size_t> unread(results.size(), 0);  // rows taken past the received
        round_robin(results.size(), first_general, [&](std::size_t r) {
            if (next_new_edge(results[r], cursor[r], seen)) return true;
            if (results[r].size() + unread[r] >= matches.counts[r]) return false;
            ++unread[r];
            return true;
        });
        for (std::size_t r = 0; r < results.size(); ++r) {
            if (unread[r] == 0) continue;
            short_ones.patterns.push_back(r);
            short_ones.rows = std::max(short_ones.rows, results[r].size() + unread[r]);
        }
        return short_ones;
    }

    // A hop's round-robin: one edge per pattern and round while the subgraph has room, first
    // over the patterns [0, first_general), then over the rest; take(r) takes pattern r's next
    // edge, false when it has none left.
    template <typename Take>
    void round_robin(std::size_t patterns, std::size_t first_general, Take take) const {
        const std::size_t room = query_.max_subgraph_size - subgraph_.size();
        std::size_t taken = 0;
        for (const auto& [from, to] :
             {std::pair{std::size_t{0}, first_general}, std::pair{first_general, patterns}}) {
            bool progress = true;
            while (progress && taken < room) {
                progress = false;
                for (std::size_t r = from; r < to && taken < room; ++r) {
                    if (take(r)) {
                        ++taken;
                        progress = true;
                    }
                }
            }
        }
    }

    // The ids of the next row of `list` from `cursor` that is an edge not in `seen` (now in it);
    // nullopt when the list has none left. Labels name nodes (the labels step reads them); they
    // are not facts to rank.
    std::optional<EdgeIds> next_new_edge(const std::vector<Triple>& list, std::size_t& cursor,
                                         std::unordered_set<EdgeIds, EdgeIdsHash>& seen) {
        while (cursor < list.size()) {
            const Triple& t = list[cursor++];
            if (t.p.is_iri() && t.p.as_iri().value == schema::vocab::kRdfsLabel) continue;
            const EdgeIds ids{terms_.id(t.s), terms_.id(t.p), terms_.id(t.o)};
            if (seen.insert(ids).second) return ids;
        }
        return std::nullopt;
    }

    static std::uint32_t concept_bit(std::size_t c) { return std::uint32_t{1} << c; }
    // True the first time the walk reaches node `id`.
    static bool reach_first(Walk& walk, TermId id) {
        auto& reached = at_id(walk.reached, id);
        if (reached) return false;
        reached = 1;
        return true;
    }
    std::uint32_t seed_mask(TermId id) const {
        return id < seed_concepts_.size() ? seed_concepts_[id] : 0;
    }
    std::uint32_t reach_of(TermId id) const { return id < reach_.size() ? reach_[id] : 0; }

    // ---- Focus: labels, pre-filter, LLM scoring, reasoning, sources ---------------------------
    base::Result<void> focus() override {
        StepTimer timer;
        if (auto r = label_subgraph(); !r) return r;
        auto candidates = prefilter();
        if (!candidates) return candidates.error();
        excluded_edges_ = drop_excluded(*candidates);
        if (auto r = check_cancel(); !r) return r;
        if (auto r = keep_scored(*candidates, timer); !r) return r;
        if (auto r = check_cancel(); !r) return r;
        if (auto r = reason_and_trace_sources(timer); !r) return r;
        return send_step(trace_.run().focus(),
                         [run = trace_.run(), info = timer.info(trace_.run().exploration()),
                          edges = selected_edges(),
                          excluded = query_.exclude.value_or(std::vector<std::string>{}),
                          dropped = excluded_edges_](schema::TripleSink& out) {
                             explain::graph_focus(out, run, info, edges);
                             explain::excluded_answers(out, run.focus(), excluded, dropped);
                         });
    }

    // Every distinct term of the subgraph labelled: labelled_, parallel to it. The traversal's
    // replies carried the labels; a store that gave none is asked in one request.
    base::Result<void> label_subgraph() {
        if (labels_complete_) {
            labelled_.reserve(subgraph_.size());
            const auto label = [&](TermId id) -> const std::string& { return *term_labels_[id]; };
            for (const auto& e : subgraph_) {
                labelled_.push_back(
                    LabelledEdge{{}, label(e.ids.s), label(e.ids.p), label(e.ids.o)});
            }
            return {};
        }
        // Each term once, in order of first appearance; term_index: term id → its position.
        constexpr std::size_t kNone = static_cast<std::size_t>(-1);
        std::vector<Term> terms;
        std::vector<std::size_t> term_index(terms_.size(), kNone);
        const auto want = [&](const Term& t, TermId id) {
            if (term_index[id] != kNone) return;
            term_index[id] = terms.size();
            terms.push_back(t);
        };
        for (const auto& e : subgraph_) {
            want(e.triple.s, e.ids.s);
            want(e.triple.p, e.ids.p);
            want(e.triple.o, e.ids.o);
        }
        auto labels = calls_->labels(terms);
        if (!labels) return labels.error();
        const auto label = [&](TermId id) { return (*labels)[term_index[id]]; };
        labelled_.reserve(subgraph_.size());
        for (const auto& e : subgraph_) {
            labelled_.push_back(LabelledEdge{{}, label(e.ids.s), label(e.ids.p), label(e.ids.o)});
        }
        return {};
    }

    // LLM scoring of the candidates, ids e1..eN in pre-filter order; the best, diversified, are
    // kept_ (best first).
    base::Result<void> keep_scored(const std::vector<std::size_t>& candidates, StepTimer& timer) {
        std::vector<LabelledEdge> shown;
        for (std::size_t i = 0; i < candidates.size(); ++i) {
            LabelledEdge e = labelled_[candidates[i]];
            e.id = std::string("e").append(std::to_string(i + 1));
            shown.push_back(std::move(e));
        }
        if (shown.empty()) return {};
        auto scored = calls_->llm("kg-edge-scoring", {{"question", query_.query},
                                                      {"concepts", json_array(concepts_)},
                                                      {"edges", edges_json(shown)}});
        if (!scored) return scored.error();
        count_tokens(*scored, timer);
        const auto scores = scores_of(*scored);
        std::vector<std::pair<std::size_t, double>> ranked;  // candidate position, score
        for (std::size_t i = 0; i < shown.size(); ++i) {
            const auto it = scores.find(shown[i].id);
            ranked.emplace_back(i, it == scores.end() ? 0.0 : it->second);
        }
        std::stable_sort(ranked.begin(), ranked.end(),
                         [](const auto& a, const auto& b) { return a.second > b.second; });
        drop_inverse_twins(ranked, candidates);
        for (const auto& [position, score] : diversify(ranked, candidates))
            kept_.push_back(KeptEdge{candidates[position], score, {}, {}});
        return {};
    }

    // Reasoning for the kept edges, ids e1..eK in kept order (the ids synthesis cites), and
    // source tracing (each kept edge → the file or chunk it was loaded from, best tier first):
    // independent requests, sent together.
    base::Result<void> reason_and_trace_sources(StepTimer& timer) {
        if (kept_.empty()) return {};
        std::vector<Triple> facts;
        for (const auto& k : kept_) facts.push_back(subgraph_[k.found].triple);
        auto answered = calls_->llm_and_fact_sources(
            "kg-edge-reasoning", {{"question", query_.query}, {"edges", edges_json(kept_view())}},
            facts);
        if (!answered) return answered.error();
        count_tokens(answered->response, timer);
        auto reasons = reasons_of(answered->response);
        for (std::size_t i = 0; i < kept_.size(); ++i) {
            if (auto it = reasons.find("e" + std::to_string(i + 1)); it != reasons.end()) {
                kept_[i].reasoning = std::move(it->second);
            }
            kept_[i].sources = std::move(answered->sources[i]);
        }
        return {};
    }

    // A follow-up's "else" (GraphRagQuery::exclude): the candidates whose subject or object is
    // labelled as something the conversation already answered go, so neither the scoring model
    // nor the answer sees them. Returns how many went.
    std::size_t drop_excluded(std::vector<std::size_t>& candidates) const {
        if (!query_.exclude || query_.exclude->empty()) return 0;
        std::unordered_set<std::string> excluded;
        for (const auto& label : *query_.exclude) excluded.insert(base::ascii_lower(label));
        const auto before = candidates.size();
        std::erase_if(candidates, [&](std::size_t i) {
            return excluded.contains(base::ascii_lower(labelled_[i].s)) ||
                   excluded.contains(base::ascii_lower(labelled_[i].o));
        });
        return before - candidates.size();
    }

    // Subgraph positions of the edges the LLM will score: all of them when they fit, else the
    // edge_score_limit best by lexical similarity of the question and each edge's "subject
    // predicate object" text (words and character trigrams), plus the conjunction bonus, minus
    // the hub penalty; ties keep traversal order.
    base::Result<std::vector<std::size_t>> prefilter() {
        std::vector<std::size_t> all(subgraph_.size());
        for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
        if (subgraph_.size() <= query_.edge_score_limit) return all;
        // Lexical similarity of the question and each edge's text, computed here: embedding the
        // edges would cost a round trip carrying a vector per edge. (An identifier's '_' parts
        // words as a space does: concept_text would change nothing here.)
        text::LexicalQuery question(query_.query);
        std::vector<double> similarity(subgraph_.size(), 0.0);
        for (std::size_t i = 0; i < subgraph_.size(); ++i) {
            const auto& e = labelled_[i];
            similarity[i] = question.cosine({e.s, e.p, e.o});
        }
        for (std::size_t i = 0; i < subgraph_.size(); ++i) {
            const auto linked = std::popcount(
                (reach_of(subgraph_[i].ids.s) | reach_of(subgraph_[i].ids.o)) & named_concepts_);
            if (linked > 1) similarity[i] += kConjunctionBonus * (linked - 1);
            // A hub the question names alone ("a soccer club in France") is where the answer
            // lies: its edges are not one of many alike to pass over.
            const bool sole_named =
                std::popcount(named_concepts_) == 1 && subgraph_[i].hop == 1 &&
                (named_concepts_ & concept_bit(subgraph_[i].concept_index)) != 0;
            if (subgraph_[i].from_hub && !sole_named) similarity[i] -= kHubPenalty;
            if (subgraph_[i].hop > 2) similarity[i] -= kDeepHopPenalty * (subgraph_[i].hop - 2);
        }
        std::stable_sort(all.begin(), all.end(), [&](std::size_t a, std::size_t b) {
            return similarity[a] > similarity[b];
        });
        // A star of alike edges (many "X cause of death assassination") resembles the question
        // alike: at most a sixth of the slots go to one node and predicate.
        all =
            cap_stars(all, query_.edge_score_limit,
                      std::max<std::size_t>(2, query_.edge_score_limit /
                                                   (list_ ? kListStarShare : kPrefilterStarShare)),
                      [&](std::size_t i) -> const EdgeIds& { return subgraph_[i].ids; });
        std::stable_sort(all.begin(), all.end(), [&](std::size_t a, std::size_t b) {
            return similarity[a] > similarity[b];
        });
        return all;
    }

    // An edge and its inverse ("X plays for country Y", "Y plays for country inverse X") state
    // one fact: the better ranked stays, the other goes, so the kept slots hold that many facts
    // (the answer reads both as one anyway) and room is left for the facts around the answers
    // (what class they are, what else joins them to the question). Two edges whose labels read
    // as the same fact are one for the answer too (it joins nodes by label).
    void drop_inverse_twins(std::vector<std::pair<std::size_t, double>>& ranked,
                            const std::vector<std::size_t>& candidates) const {
        std::unordered_set<std::string> facts;
        std::erase_if(ranked, [&](const std::pair<std::size_t, double>& entry) {
            const auto f = fact_reading(labelled_[candidates[entry.first]]);
            std::string key(f.s);
            key.append(1, '\x1f').append(f.p).append(1, '\x1f').append(f.o);
            std::replace(key.begin(), key.end(), '_', ' ');
            return !facts.insert(base::ascii_lower(key)).second;
        });
    }

    // The best edge_limit of the scored edges (best first), no more than edge_limit / 3 of
    // them sharing a subject and predicate or a predicate and object, unless slots are left.
    std::vector<std::pair<std::size_t, double>> diversify(
        const std::vector<std::pair<std::size_t, double>>& ranked,
        const std::vector<std::size_t>& candidates) const {
        auto kept = cap_stars(
            ranked, query_.edge_limit,
            std::max<std::size_t>(2, query_.edge_limit / (list_ ? kListStarShare : kStarShare)),
            [&](const std::pair<std::size_t, double>& entry) -> const EdgeIds& {
                return subgraph_[candidates[entry.first]].ids;
            });
        std::stable_sort(kept.begin(), kept.end(),
                         [](const auto& a, const auto& b) { return a.second > b.second; });
        return kept;
    }

    std::vector<LabelledEdge> kept_view() const {
        std::vector<LabelledEdge> view;
        for (std::size_t i = 0; i < kept_.size(); ++i) {
            LabelledEdge e = labelled_[kept_[i].found];
            e.id = std::string("e").append(std::to_string(i + 1));
            view.push_back(std::move(e));
        }
        return view;
    }

    std::vector<explain::SelectedEdge> selected_edges() const {
        std::vector<explain::SelectedEdge> selected;
        for (const auto& k : kept_) {
            const auto& found = subgraph_[k.found];
            explain::SelectedEdge e;
            e.edge = found.triple;
            e.score = k.score;
            e.concept_label = concepts_[found.concept_index];
            e.reasoning = k.reasoning;
            if (!k.sources.empty()) {
                const auto& best = k.sources.front();
                explain::SourceRef ref;
                if (best.kind == "chunk") {
                    ref.chunk = best.source;
                    ref.document = best.document.value_or("");
                } else {
                    ref.document = best.source;
                }
                ref.loaded_at = best.loaded_at;
                ref.date = best.date.value_or("");
                ref.max_age = best.max_age.value_or("");
                ref.stale = best.stale;
                e.source = std::move(ref);
                e.data_tier = static_cast<int>(best.tier);
            }
            selected.push_back(std::move(e));
        }
        return selected;
    }

    // ---- Synthesis ------------------------------------------------------------------------------
    base::Result<void> synthesis() override {
        StepTimer timer;
        auto synthesised = synthesise_answer(
            timer, "kg-synthesis", {{"question", query_.query}, {"edges", edges_json(kept_view())}},
            query_.streaming, "e", kept_.size());
        if (!synthesised) return synthesised.error();
        std::vector<std::string> sources;
        std::unordered_set<std::string> listed;
        for (const auto& k : kept_) {
            for (const auto& s : k.sources) {
                if (listed.insert(s.source).second) sources.push_back(s.source);
            }
        }
        GraphEvidence ev = evidence(*synthesised);
        if (auto one = one_disputed_value(*synthesised, ev)) {
            *synthesised = std::move(*one);
            ev = evidence(*synthesised);
        }
        return finish(
            timer, trace_.run().focus(), *synthesised, "e",
            [&](std::size_t k) { return trace_.run().edge_selection(k); },
            [&](std::size_t k, std::string_view) { return cited_edge(k); }, std::move(sources),
            graph_features(ev), graph_completeness(ev, synthesised->answer), conflicts_of(ev));
    }

    // A short answer naming the values of a disputed fact together ("1879 and 1881") states one
    // (listed_disputed_values: the better supported) and gives the others as another source's,
    // each cited (restate_disputed): "Saltspire Light was built in 1879 [e1]; another source
    // gives 1881 [e2]." The conflict note follows as for any conflict. A streamed answer went
    // out as synthesised: the FINAL's text replaces it. nullopt: nothing to restate, or text the
    // rewrite does not recognise (a model's own wording), left as it is.
    std::optional<SynthesisResult> one_disputed_value(const SynthesisResult& given,
                                                      const GraphEvidence& ev) const {
        if (!given.short_answer) return std::nullopt;
        const auto disputed = listed_disputed_values(ev);
        if (!disputed) return std::nullopt;
        const auto id_of = [](std::size_t k) { return "e" + std::to_string(k + 1); };
        auto text = restate_disputed(given.response.text, *given.short_answer, *disputed, id_of);
        if (!text) return std::nullopt;
        const std::size_t count = kept_.size();
        const auto known = [count](std::string_view id) {
            const auto n = marker_number(id, "e");
            return n && *n >= 1 && *n <= count;
        };
        SynthesisResult out = given;
        auto stripped = strip_markers(*text, known, "e");
        out.answer = std::move(stripped.text);
        out.citations = std::move(stripped.citations);
        out.response.text = std::move(*text);
        out.short_answer = disputed->stated.value;
        out.response.answer = out.short_answer;
        for (const auto& rival : disputed->rivals)
            for (const auto k : rival.edges) std::erase(out.short_answer_ids, id_of(k));
        out.response.answer_ids = out.short_answer_ids;
        return out;
    }

    // The conflicts among the kept edges (graph_conflicts), in words, with their selections. Two
    // edges giving the stated value (or the rival) from their own sources are one conflict with
    // the sources of both, so the confidence is lowered by the stated value's share of them.
    std::vector<explain::AnswerConflict> conflicts_of(const GraphEvidence& ev) const {
        std::vector<explain::AnswerConflict> out;
        const auto add_sources = [](std::vector<std::string>& to,
                                    const std::vector<std::string>& from) {
            for (const auto& s : from)
                if (std::find(to.begin(), to.end(), s) == to.end()) to.push_back(s);
        };
        for (const auto& c : graph_conflicts(ev)) {
            const auto& stated = ev.kept[c.stated];
            const auto& rival = ev.kept[c.rival];
            const auto same = std::find_if(out.begin(), out.end(), [&](const auto& o) {
                return o.subject == stated.s_label && o.predicate == stated.p_label &&
                       o.stated == stated.o_label && o.rival == rival.o_label;
            });
            if (same != out.end()) {
                add_sources(same->stated_sources, stated.sources);
                add_sources(same->rival_sources, rival.sources);
                continue;
            }
            out.push_back({stated.s_label, stated.p_label, stated.o_label, rival.o_label,
                           trace_.run().edge_selection(c.stated),
                           trace_.run().edge_selection(c.rival), stated.sources, rival.sources});
        }
        return out;
    }

    // What the answer's evidence features read: the kept edges, the seeds, the short answer.
    GraphEvidence evidence(const SynthesisResult& synthesised) {
        GraphEvidence ev;
        ev.question = query_.query;
        for (const auto& k : kept_) {
            const auto& found = subgraph_[k.found];
            const auto& words = labelled_[k.found];
            EvidenceEdge e{found.ids.s, found.ids.o, words.s, words.p, words.o, k.score, {}, 0};
            for (const auto& s : k.sources) e.sources.push_back(s.source);
            if (!k.sources.empty()) e.tier = static_cast<int>(k.sources.front().tier);
            ev.kept.push_back(std::move(e));
        }
        for (const auto& seed : seeds_) {
            ev.seeds.push_back(terms_.id(seed.entity));
            ev.seed_match = std::max(ev.seed_match, seed.score);
        }
        ev.short_answer = synthesised.short_answer;
        for (const auto& id : synthesised.short_answer_ids) {
            if (const auto n = marker_number(id, "e"); n && *n >= 1)
                ev.answer_edges.push_back(*n - 1);
        }
        return ev;
    }

    // Kept edge k as the reader sees it: the fact in words (an inverse edge read the right way
    // round) and its best source.
    schema::RagCitation cited_edge(std::size_t k) const {
        schema::RagCitation c;
        c.kind = "edge";
        if (k >= kept_.size()) return c;
        const auto f = fact_reading(labelled_[kept_[k].found]);
        c.text = std::string(f.s).append(" ").append(f.p).append(" ").append(f.o);
        // The parts too: the agent checks a fact's subject and predicate against documents.
        c.subject = std::string(f.s);
        c.predicate = std::string(f.p);
        c.object = std::string(f.o);
        if (!kept_[k].sources.empty()) schema::cite_fact_source(c, kept_[k].sources.front());
        return c;
    }

    std::string collection_name() const {
        return query_.collection.empty() ? "default" : query_.collection;
    }

    schema::GraphRagQuery query_;
    std::vector<Seed> seeds_;
    // Shared with the exploration step's builder, which reads the edges when the step goes out
    // (after the next call, or after this run has ended): no copy of each edge for the trace.
    // Only traverse() adds to it; nothing changes it after the exploration step.
    std::shared_ptr<std::vector<FoundEdge>> found_ = std::make_shared<std::vector<FoundEdge>>();
    std::vector<FoundEdge>& subgraph_ = *found_;
    TermIds terms_;                             // every term met, numbered
    std::vector<std::uint32_t> reach_;          // term id → bit set of concepts reaching it
    std::vector<std::uint32_t> seed_concepts_;  // term id of a seed → its concept's bit
    std::uint32_t named_concepts_ = 0;          // concepts whose best match names an entity
    std::vector<LabelledEdge> labelled_;        // parallel to subgraph_
    // Term id → its label, from the traversal's replies; complete unless a reply had none.
    std::vector<std::optional<std::string>> term_labels_;
    bool labels_complete_ = true;
    std::vector<KeptEdge> kept_;
    std::size_t excluded_edges_ = 0;  // candidates a follow-up's "else" dropped
    bool list_ = false;               // the question asks for a list (set by exploration)
};

}  // namespace

base::Result<schema::GraphRagQuery> resolve_graph_query(const schema::GraphRagQuery& query,
                                                        const RagConfig& config) {
    if (auto ok = check_question(query.query, query.parent_uri, config); !ok) return ok.error();
    if (auto ok = check_session_id(query.session_id); !ok) return ok.error();
    schema::GraphRagQuery q = query;
    auto entity = bounded_parameter("entity_limit", q.entity_limit, config.entity_limit,
                                    config.max_entity_limit);
    if (!entity) return entity.error();
    auto triple = bounded_parameter("triple_limit", q.triple_limit, config.triple_limit,
                                    config.max_triple_limit);
    if (!triple) return triple.error();
    auto subgraph = bounded_parameter("max_subgraph_size", q.max_subgraph_size,
                                      config.subgraph_size, config.max_subgraph_size);
    if (!subgraph) return subgraph.error();
    auto path = bounded_parameter("max_path_length", q.max_path_length, config.path_length,
                                  config.max_path_length);
    if (!path) return path.error();
    auto score_limit = bounded_parameter("edge_score_limit", q.edge_score_limit,
                                         config.edge_score_limit, config.max_edge_score_limit);
    if (!score_limit) return score_limit.error();
    auto edge =
        bounded_parameter("edge_limit", q.edge_limit, std::min(config.edge_limit, *score_limit),
                          config.max_edge_score_limit);
    if (!edge) return edge.error();
    if (*edge > *score_limit) {
        return make_error(ErrorType::kInvalidRequest,
                          "\"edge_limit\" (" + std::to_string(*edge) +
                              ") must not exceed \"edge_score_limit\" (" +
                              std::to_string(*score_limit) + "): only scored edges can be kept");
    }
    q.entity_limit = *entity;
    q.triple_limit = *triple;
    q.max_subgraph_size = *subgraph;
    q.max_path_length = *path;
    q.edge_score_limit = *score_limit;
    q.edge_limit = *edge;
    return q;
}

// The bytes schema::dump writes for [{"id","s","p","o"}, …] (keys in its sorted order), written
// directly: the edges go to the llm three times per question.
std::string edges_json(const std::vector<LabelledEdge>& edges) {
    std::string out = "[";
    for (const auto& e : edges) {
        if (out.size() > 1) out += ',';
        out += "{\"id\":";
        schema::append_json_string(out, e.id);
        out += ",\"o\":";
        schema::append_json_string(out, e.o);
        out += ",\"p\":";
        schema::append_json_string(out, e.p);
        out += ",\"s\":";
        schema::append_json_string(out, e.s);
        out += '}';
    }
    out += ']';
    return out;
}

void handle_graph_rag(runtime::RequestContext& context, const RagConfig& config,
                      BuiltinEmbeddings* builtin_embeddings) {
    GraphRagRun(context, config, builtin_embeddings).run();
}

runtime::Handler make_graph_rag_handler(RagConfig config) {
    // Shared: every slot's copy of the handler sees one gate.
    auto builtin = std::make_shared<BuiltinEmbeddings>(config.builtin_embeddings_ttl);
    return [config = std::move(config), builtin](runtime::RequestContext& context) {
        handle_graph_rag(context, config, builtin.get());
    };
}

}  // namespace glassbox::rag
