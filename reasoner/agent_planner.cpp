// The deterministic agent planner: a chain of single-relation lookups from the question's words.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "base/ascii.hpp"
#include "reasoner/detail/aggregate_plan.hpp"
#include "reasoner/detail/name_list.hpp"
#include "reasoner/detail/question_analysis.hpp"
#include "reasoner/detail/question_intent.hpp"
#include "reasoner/detail/relation_cues.hpp"
#include "reasoner/reasoner.hpp"
#include "schema/untrusted_json.hpp"
#include "text/reference_resolution.hpp"

namespace glassbox::reasoner {

// The question's analysis (reasoner/detail/) under the names the writers use.
using detail::answer_type_mismatch;
using detail::AnswerType;
using detail::predicate_match;
using detail::question_intent;
using detail::question_relations;
using detail::QuestionIntent;
using detail::QuestionRelations;
using detail::relation_cues;

using nlohmann::json;

namespace {

constexpr std::string_view kTriples = "triples-query";
constexpr std::string_view kKnowledge = "knowledge-query";
constexpr std::string_view kDocument = "document-query";
constexpr std::string_view kGraphQuery = "graph-query";

std::string str(const json& object, const char* key) {
    if (!object.is_object()) return {};
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool offered(const json& tools, std::string_view name) {
    if (!tools.is_array()) return false;
    return std::any_of(tools.begin(), tools.end(),
                       [&](const json& t) { return str(t, "name") == name; });
}

// "place_of_birth" → "place of birth": predicates are matched by their words.
std::string words_of(std::string_view name) {
    std::string out(name);
    std::replace(out.begin(), out.end(), '_', ' ');
    return out;
}

// True when a word of `predicate` and `word` share a root the stemmer keeps apart: an agent
// noun and its verb ("designer" / "designed", "founder" / "founded"): a common start of at
// least five letters covering all but two letters of the shorter word.
bool shared_root(const std::string& predicate, const std::string& word) {
    const std::string lower = base::ascii_lower(word);
    std::size_t start = 0;
    while (start < predicate.size()) {
        const std::size_t end = std::min(predicate.find(' ', start), predicate.size());
        const std::string_view piece(predicate.data() + start, end - start);
        std::size_t common = 0;
        while (common < piece.size() && common < lower.size() &&
               base::ascii_lower(piece[common]) == lower[common])
            ++common;
        if (common >= 5 && common + 2 >= std::min(piece.size(), lower.size())) return true;
        start = end + 1;
    }
    return false;
}

// An entity reached by following the chain: how well the path matched, and where it came from
// (to avoid walking straight back along a symmetric relation such as spouse).
struct Reached {
    std::string key;  // IRI, or the literal's text
    std::string label;
    double score = 0.0;
    std::string from;      // the key of the entity it was reached from
    bool literal = false;  // a value (a year, a number, a text), not an entity
};

// One tool call of an earlier step, as the agent reported it.
struct PastCall {
    std::string tool;
    json args;
    json observation;  // parsed JSON observation, or a string
    bool error = false;
};

std::vector<PastCall> calls_of(const json& step) {
    std::vector<PastCall> calls;
    if (!step.is_object() || !step.contains("calls") || !step["calls"].is_array()) return calls;
    for (const json& c : step["calls"]) {
        PastCall call;
        call.tool = str(c, "tool");
        call.args = c.is_object() ? c.value("args", json::object()) : json::object();
        call.error = c.is_object() && c.value("error", false);
        const std::string text = str(c, "observation");
        auto observation = schema::parse_untrusted_json(text);
        call.observation = observation ? std::move(observation).value() : json(text);
        calls.push_back(std::move(call));
    }
    return calls;
}

class Planner {
public:
    Planner(std::string_view question, const json& tools, const PlannerLimits& limits,
            const std::vector<std::string>& exclude)
        : question_(question), tools_(tools), limits_(limits), exclude_(exclude) {
        const auto analysis = detail::analyze_question(question);
        intent_ = question_intent(question, analysis);
        relations_ = question_relations(analysis);
        order_nested_chain(analysis);
    }

    PlannerStep next(const json& steps) {
        // Counts, value filters, superlatives and comparisons: graph-query attempts first; when
        // they are used up without rows, the whole question goes to a retrieval tool.
        if (offered(tools_, kGraphQuery) && !asked_whole_before(steps)) {
            if (const auto shape = detail::aggregate_shape(question_)) {
                if (auto step = detail::plan_aggregate_step(*shape, steps)) return std::move(*step);
                return ask_whole("The graph queries found nothing");
            }
        }
        const Progress progress = read_steps(steps);
        const std::size_t hop = progress.hop;
        if (progress.whole && progress.document_queries == 1 &&
            intent_.type != AnswerType::kYesNo) {
            if (auto step = bridge_step(*progress.whole)) return std::move(*step);
        }
        if (progress.whole && !progress.checked && worth_checking(*progress.whole))
            return check_whole_against_documents(*progress.whole);
        if (progress.whole) return answer_from_whole(*progress.whole);
        if (hop == 0 && !progress.asked_whole) {
            const bool chain_possible =
                offered(tools_, kTriples) && !intent_.entities.empty() && !relations_.chain.empty();
            if (chain_possible) return first_lookup();
            return ask_whole("No chain of relations to follow");
        }
        if (progress.frontier.empty()) return after_empty_lookup(hop, progress.asked_whole);
        if (hop == relations_.chain.size()) {
            if (!progress.checked && worth_checking(progress.frontier))
                return check_against_documents(progress.frontier.front());
            return chain_complete(progress.frontier);
        }
        return next_hop(progress.frontier, hop);
    }

private:
    // True when a step asked a retrieval tool the whole question (the graph-query fallback).
    static bool asked_whole_before(const json& steps) {
        if (!steps.is_array()) return false;
        for (const json& step : steps) {
            for (const auto& call : calls_of(step))
                if (call.tool == kKnowledge || call.tool == kDocument) return true;
        }
        return false;
    }

    // What the steps so far found: the chain's frontier and the hops it took, and the last
    // whole-question answer (knowledge-query or document-query) when one was asked.
    struct Progress {
        std::vector<Reached> frontier;
        std::size_t hop = 0;
        bool asked_whole = false;
        std::optional<PastCall> whole;
        std::size_t document_queries = 0;
        bool checked = false;  // a complete chain's value was asked of the documents
    };

    Progress read_steps(const json& steps) const {
        Progress p;
        bool chain_over = false;
        const std::size_t n_steps = steps.is_array() ? steps.size() : 0;
        for (std::size_t i = 0; i < n_steps; ++i) {
            const auto calls = calls_of(steps[i]);
            if (calls.empty()) continue;  // a reply that did not parse: nothing learnt
            if (calls.front().tool == kTriples) {
                // Once a lookup came back empty the chain is over; later steps are the fallback.
                if (p.hop >= relations_.chain.size() || chain_over) continue;
                auto next = follow(calls, p.hop, p.frontier);
                p.frontier = std::move(next.frontier);
                p.hop += next.consumed;
                chain_over = p.frontier.empty();
            } else if (calls.front().tool == kDocument &&
                       ((!p.frontier.empty() && p.hop == relations_.chain.size()) ||
                        (p.whole && p.whole->tool == kKnowledge &&
                         !str(p.whole->observation, "answer").empty()))) {
                // Asked after the chain was complete, or after knowledge-query gave a value: a
                // check of that value, not the answer.
                p.checked = true;
            } else if (calls.front().tool == kKnowledge || calls.front().tool == kDocument) {
                p.asked_whole = true;
                if (calls.front().tool == kDocument) ++p.document_queries;
                // A bridge answer that the second lookup could not improve on stays.
                if (!p.whole || !str(calls.front().observation, "answer").empty())
                    p.whole = calls.front();
            }
        }
        return p;
    }

    // The relations of the chain: "children → spouse → nationality".
    std::string path_words() const {
        std::string words;
        for (std::size_t h = 0; h < relations_.chain.size(); ++h)
            words += (h ? " → " : "") + relations_.mentions[relations_.chain[h]].key;
        return words;
    }

    // Two-document questions: the first passage names the bridge (a film, a person); the same
    // question asked again about it reaches the second document. nullopt: no bridge named.
    std::optional<PlannerStep> bridge_step(const PastCall& whole) const {
        const std::string bridge = str(whole.observation, "answer");
        if (whole.error || bridge.empty()) return std::nullopt;
        PlannerStep step;
        step.thought = "The documents point to " + bridge + "; ask again about " + bridge +
                       " to reach the document that answers the question.";
        step.calls.push_back(
            {std::string(kDocument), json{{"question", bridge + ": " + question_}}});
        return step;
    }

    // The chain's first step: resolve the named entity and read its facts.
    PlannerStep first_lookup() const {
        PlannerStep step;
        step.thought = "The question names " + intent_.entities.front() + " and follows " +
                       std::to_string(relations_.chain.size()) + " relation(s): " + path_words() +
                       ". First resolve " + intent_.entities.front() + " and read its facts.";
        step.calls.push_back({std::string(kTriples), json{{"subject", intent_.entities.front()}}});
        return step;
    }

    // A lookup came back empty: ask the whole question when a tool can, else say so.
    PlannerStep after_empty_lookup(std::size_t hop, bool asked_whole) const {
        const std::string relation =
            relations_.mentions[relations_.chain[hop == 0 ? 0 : hop - 1]].key;
        if (!asked_whole && (offered(tools_, kKnowledge) || offered(tools_, kDocument)))
            return ask_whole("The lookup for \"" + relation + "\" came back empty");
        PlannerStep step;
        step.thought = "The lookup for \"" + relation +
                       "\" came back empty: the facts do not decide the question.";
        step.response = "The knowledge graph has no \"" + relation + "\" fact on this path.";
        return step;
    }

    // The chain is complete: its ends (after a follow-up's exclusions) are the answer, the best
    // reached first, at most limits_.listed named and the rest counted ("and 3 others").
    PlannerStep chain_complete(std::vector<Reached> frontier) const {
        const std::string words = path_words();
        const std::string left_out = leave_out_excluded(frontier);
        const std::size_t listed =
            std::min(frontier.size(), std::max<std::size_t>(1, limits_.listed));
        std::vector<std::string> names;
        for (std::size_t k = 0; k < listed; ++k) names.push_back(frontier[k].label);
        const std::string list = detail::join_names(names, frontier.size() - listed);
        // Several ends are counted, so a reader sees the answer is a list ("2 things: A and B").
        const std::string ends =
            frontier.size() > 1 ? std::to_string(frontier.size()) + " things: " + list : list;
        PlannerStep step;
        step.final_answer = list;
        step.thought = "The chain " + words + " is complete; it ends at " + ends + "." + left_out;
        step.response =
            "Following " + words + " from " + intent_.entities.front() + " leads to " + ends + ".";
        return step;
    }

    // A complete chain that ends at one value (a year, a number, a text: the facts most likely
    // to be restated, or dated, by a document) is checked against the documents once, when a
    // document tool is offered; the agent worker compares the two (a conflict is reported).
    // An entity end is not checked: that would double the cost of every lookup answer.
    bool worth_checking(const std::vector<Reached>& frontier) const {
        return frontier.size() == 1 && frontier.front().literal && offered(tools_, kDocument) &&
               intent_.type != AnswerType::kYesNo;
    }

    // The same for a knowledge-query answer that is a value with a number in it (a year, a
    // count, a date), or a name that is one fact's value for a question asking for one thing
    // (the observation's "single_value", which the agent sets from graph-rag's citation and
    // completeness): graph-rag's answer is checked against the documents once. A list of names
    // is not checked (a document naming one more is no dispute). The agent marks a name so only
    // when the collection has documents; the check adds one document-rag run, +12 to +16 ms on
    // the sample's agent answers of 52-67 ms (docs/agent.md §3).
    bool worth_checking(const PastCall& whole) const {
        if (whole.tool != kKnowledge || whole.error || !whole.observation.is_object() ||
            !offered(tools_, kDocument) || intent_.type == AnswerType::kYesNo)
            return false;
        const std::string answer = str(whole.observation, "answer");
        if (answer.empty()) return false;
        const bool number =
            std::any_of(answer.begin(), answer.end(), [](char c) { return c >= '0' && c <= '9'; });
        const auto single = whole.observation.find("single_value");
        return number ||
               (single != whole.observation.end() && single->is_boolean() && single->get<bool>());
    }

    PlannerStep check_whole_against_documents(const PastCall& whole) const {
        PlannerStep step;
        step.thought = std::string(kKnowledge) + " answered " + str(whole.observation, "answer") +
                       "; check it against the documents: ask " + std::string(kDocument) +
                       " the whole question.";
        step.calls.push_back({std::string(kDocument), json{{"question", question_}}});
        return step;
    }

    PlannerStep check_against_documents(const Reached& end) const {
        PlannerStep step;
        step.thought = "The chain " + path_words() + " ends at the value " + end.label +
                       "; check it against the documents: ask " + std::string(kDocument) +
                       " the whole question.";
        step.calls.push_back({std::string(kDocument), json{{"question", question_}}});
        return step;
    }

    // The next hop: follow the chain's next relation from every entity reached.
    PlannerStep next_hop(const std::vector<Reached>& frontier, std::size_t hop) const {
        PlannerStep step;
        const std::string next = relations_.mentions[relations_.chain[hop]].key;
        step.thought = "Hop " + std::to_string(hop) + " reached ";
        for (std::size_t k = 0; k < frontier.size(); ++k)
            step.thought += (k ? ", " : "") + frontier[k].label;
        step.thought += "; next follow \"" + next + "\" from there.";
        for (const auto& r : frontier)
            step.calls.push_back({std::string(kTriples), json{{"subject", r.key}}});
        return step;
    }

    // A follow-up's "else": the entities reached that the conversation already answered go
    // (unless nothing else was reached). Says what went, for the thought ("" when nothing).
    std::string leave_out_excluded(std::vector<Reached>& frontier) const {
        if (exclude_.empty()) return {};
        const auto excluded = [&](const Reached& r) {
            return std::any_of(exclude_.begin(), exclude_.end(), [&](const std::string& e) {
                return base::ascii_iequals(e, r.label);
            });
        };
        std::vector<Reached> kept;
        std::string gone;
        for (const auto& r : frontier) {
            if (!excluded(r)) {
                kept.push_back(r);
            } else {
                gone += (gone.empty() ? "" : ", ") + r.label;
            }
        }
        if (kept.empty() || gone.empty()) return {};
        frontier = std::move(kept);
        return " Leaving out " + gone + ", which the conversation already answered.";
    }

    // Without possessives, the relation words after the named entity belong to the outermost
    // phrase ("where was the designer of X born": designer first, born last), so the lookups
    // take them after those before the entity; a possessive chain ("X 's kid 's spouse") keeps
    // question_relations' order.
    void order_nested_chain(const detail::QuestionAnalysis& analysis) {
        std::size_t entity = analysis.tokens.size();
        for (const auto& t : analysis.tokens) {
            if (t.possessive) return;
            if (t.in_entity) entity = std::min(entity, t.index);
        }
        if (entity == analysis.tokens.size()) return;
        std::vector<std::size_t> before;
        std::vector<std::size_t> after;
        for (const std::size_t m : relations_.chain)
            (relations_.mentions[m].position < entity ? before : after).push_back(m);
        before.insert(before.end(), after.begin(), after.end());
        relations_.chain = std::move(before);
    }

    PlannerStep ask_whole(const std::string& why) const {
        PlannerStep step;
        const bool graph = offered(tools_, kKnowledge) && !intent_.entities.empty();
        const std::string_view tool = graph                        ? kKnowledge
                                      : offered(tools_, kDocument) ? kDocument
                                                                   : kKnowledge;
        if (!offered(tools_, tool)) {
            step.thought = why + ", and no retrieval tool is offered.";
            return step;
        }
        step.thought = why + ": ask " + std::string(tool) + " the whole question.";
        step.calls.push_back({std::string(tool), json{{"question", question_}}});
        return step;
    }

    static PlannerStep answer_from_whole(const PastCall& call) {
        PlannerStep step;
        if (call.error || !call.observation.is_object()) {
            step.thought = call.tool + " failed; the question stays open.";
            step.response = "The lookups did not answer the question.";
            return step;
        }
        step.final_answer = str(call.observation, "answer");
        step.response = str(call.observation, "response");
        step.thought = call.tool + " answered" +
                       (step.final_answer.empty() ? " without a short answer."
                                                  : ": " + step.final_answer + ".");
        return step;
    }

    // How well `predicate` expresses relation mention `m`: the share of the mention's words
    // (by weight) that some word of the predicate matches, so "plays in club" beats "plays for
    // country" for "the club that X plays for" though both match "plays".
    double hop_match(const std::string& predicate, std::size_t m) const {
        if (m >= relations_.mentions.size()) return 0.0;
        const std::string words = words_of(predicate);
        const auto grid = predicate_match(words, relations_.words);
        double covered = 0.0;
        double total = 0.0;
        for (const std::size_t w : relations_.mentions[m].words) {
            if (w >= relations_.words.size()) continue;
            double best = shared_root(words, relations_.words[w].surface) ? 0.9 : 0.0;
            for (const auto& row : grid)
                if (w < row.size()) best = std::max(best, row[w]);
            covered += relations_.words[w].weight * best;
            total += relations_.words[w].weight;
        }
        return total > 0.0 ? covered / total : 0.0;
    }

    // The entities this hop's lookups reach, and how many of the chain's relation mentions
    // the hop used: one ("children"); two when one predicate says both of two different
    // mentions ("place of death" for "place" and "death"); or the next one alone when none of
    // the facts expresses this one (a word that names no relation of the graph, "practice").
    struct Hop {
        std::vector<Reached> frontier;
        std::size_t consumed = 1;
    };

    Hop follow(const std::vector<PastCall>& calls, std::size_t hop,
               const std::vector<Reached>& previous) const {
        const std::size_t n = relations_.chain.size();
        const std::size_t m1 = relations_.chain[hop];
        const bool has_next = hop + 1 < n;
        const std::size_t m2 = has_next ? relations_.chain[hop + 1] : m1;
        const auto class_bonus = [&](const std::string& predicate, bool last) {
            if (!last || intent_.class_word.empty()) return 0.0;
            const std::string words = " " + words_of(predicate) + " ";
            return words.find(" " + intent_.class_word + " ") != std::string::npos ? 0.9 : 0.0;
        };
        if (has_next && relations_.mentions[m1].key != relations_.mentions[m2].key) {
            const bool last = hop + 2 == n;
            auto joint = reach(calls, previous, last, [&](const std::string& p) {
                const double a = hop_match(p, m1);
                const double b = hop_match(p, m2);
                return a >= limits_.min_match && b >= limits_.min_match ? (a + b) / 2 : 0.0;
            });
            if (!joint.empty()) return {std::move(joint), 2};
        }
        const bool last = hop + 1 == n;
        auto single = reach(calls, previous, last, [&](const std::string& p) {
            return std::max(hop_match(p, m1), class_bonus(p, last));
        });
        if (!single.empty() || !has_next) return {std::move(single), 1};
        const bool skip_last = hop + 2 == n;
        return {reach(calls, previous, skip_last,
                      [&](const std::string& p) {
                          return std::max(hop_match(p, m2), class_bonus(p, skip_last));
                      }),
                2};
    }

    // The entities the facts reach along the predicates `match` scores at least min_match.
    template <typename Match>
    std::vector<Reached> reach(const std::vector<PastCall>& calls,
                               const std::vector<Reached>& previous, bool last,
                               const Match& match) const {
        std::map<std::string, std::string> came_from;  // entity → what it was reached from
        std::map<std::string, double> prior;
        for (const auto& p : previous) {
            came_from[p.key] = p.from;
            prior[p.key] = p.score;
        }
        std::map<std::string, Reached> reached;
        for (const auto& call : calls) {
            if (call.error || !call.observation.is_object()) continue;
            const std::string entity = str(call.observation, "iri");
            const json facts = call.observation.value("facts", json::array());
            if (!facts.is_array()) continue;
            const double base = prior.count(entity) ? prior[entity] : 1.0;
            const std::string back = came_from.count(entity) ? came_from[entity] : std::string();
            struct Hit {
                std::string key, label;
                double match;
                bool literal = false;
            };
            std::vector<Hit> hits;
            double best = 0.0;
            for (const json& f : facts) {
                const std::string dir = str(f, "dir");
                const std::string predicate = str(f, "p");
                // An incoming fact, or a predicate named as the inverse of another, is the
                // relation read backwards: it counts only when no forward reading does.
                const bool backwards = dir == "in" || words_of(predicate).ends_with(" inverse") ||
                                       predicate.ends_with("Inverse");
                const double score = match(predicate) * (backwards ? 0.6 : 1.0);
                if (score < limits_.min_match) continue;
                Hit hit;
                hit.label = dir == "in" ? str(f, "s") : str(f, "o");
                hit.key = str(f, "other");
                if (hit.key.empty() && !last) continue;  // a literal has no facts to follow
                if (hit.key.empty()) {
                    hit.key = hit.label;
                    hit.literal = true;
                }
                if (last && answer_type_mismatch(intent_, hit.label)) continue;
                hit.match = score;
                best = std::max(best, score);
                hits.push_back(std::move(hit));
            }
            // Only the best-matching relation is followed; walking straight back to where we
            // came from (spouse of a spouse) counts only when nothing else is reached.
            std::vector<Hit> kept;
            for (auto& h : hits)
                if (h.match >= best - 1e-9 && h.key != back) kept.push_back(h);
            if (kept.empty())
                for (auto& h : hits)
                    if (h.match >= best - 1e-9) kept.push_back(h);
            for (const auto& h : kept) {
                auto& r = reached[h.key];
                r.key = h.key;
                r.label = h.label;
                r.from = entity;
                r.literal = h.literal;
                r.score += base * h.match;
            }
        }
        std::vector<Reached> out;
        out.reserve(reached.size());
        for (auto& [key, r] : reached) out.push_back(std::move(r));
        std::stable_sort(out.begin(), out.end(),
                         [](const Reached& a, const Reached& b) { return a.score > b.score; });
        // The last hop's ends are the answer, all of them named or counted; an inner hop carries
        // only the best few on (each is one lookup).
        if (!last && out.size() > limits_.frontier) out.resize(limits_.frontier);
        return out;
    }

    std::string question_;
    const json& tools_;
    PlannerLimits limits_;
    std::vector<std::string> exclude_;
    QuestionIntent intent_;
    QuestionRelations relations_;
};

}  // namespace

PlannerStep plan_agent_step(std::string_view question, const json& tools, const json& steps,
                            const PlannerLimits& limits, const std::vector<std::string>& exclude) {
    return Planner(question, tools, limits, exclude).next(steps);
}

PlannerStep plan_agent_turn(std::string_view question, const json& tools, const json& steps,
                            const json& history, const PlannerLimits& limits) {
    std::vector<text::EarlierTurn> turns;
    if (history.is_array()) {
        for (const json& turn : history) {
            turns.push_back(
                {str(turn, "question"), str(turn, "answer"), str(turn, "short_answer")});
        }
    }
    const auto resolved = text::resolve_reference(question, turns);
    const auto excluded = text::already_answered(question, turns, resolved);
    PlannerStep step = plan_agent_step(resolved.question, tools, steps, limits, excluded.entities);
    const bool first = !steps.is_array() || steps.empty();
    if (resolved.resolved() && first) {
        step.thought = "Reading \"" + resolved.reference + "\" as " + resolved.entity + " (" +
                       resolved.rule + " of the previous turn): " + resolved.question + " " +
                       step.thought;
    }
    return step;
}

std::string render_react(const PlannerStep& step) {
    std::string out = "Thought: " + step.thought + "\n";
    if (!step.calls.empty()) {
        for (const auto& call : step.calls)
            out += "Action: " + call.tool +
                   "\nArgs: " + call.args.dump(-1, ' ', false, json::error_handler_t::replace) +
                   "\n";
        return out;
    }
    out += "Final Answer: " + step.final_answer + "\n";
    if (!step.response.empty()) out += step.response + "\n";
    return out;
}

}  // namespace glassbox::reasoner
