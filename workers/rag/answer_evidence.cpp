// The evidence features of an answer (workers/rag/answer_evidence.hpp).
#include "workers/rag/answer_evidence.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "base/utf8.hpp"
#include "reasoner/stated_confidence.hpp"
#include "text/stopwords.hpp"
#include "text/tokenize.hpp"

namespace glassbox::rag {
namespace {

using reasoner::EvidenceFeatures;

// The stems of a text's words that carry content (stopwords left out).
std::set<std::string> content_stems(std::string_view text) {
    std::set<std::string> out;
    for (const auto& word : text::words(text)) {
        if (!text::is_stopword(word)) out.insert(text::stem(word));
    }
    return out;
}

// The share of the question's content words that `evidence` contains (0 for a question with
// none).
double coverage(const std::set<std::string>& question, const std::set<std::string>& evidence) {
    if (question.empty()) return 0.0;
    const auto covered = std::count_if(question.begin(), question.end(),
                                       [&](const std::string& w) { return evidence.contains(w); });
    return static_cast<double>(covered) / static_cast<double>(question.size());
}

std::string folded(std::string_view text) {
    std::string out;
    text::for_each_word(text, [&](std::string_view word) {
        if (!out.empty()) out.push_back(' ');
        out += word;
    });
    return out;
}

// A predicate that states a class ("type", rdf:type's label, "instance of"): an answer reached
// over it is a class, rarely the thing asked for.
bool is_type_predicate(std::string_view label) {
    const std::string words = folded(label);
    return words == "type" || words == "rdf type" || words == "is a" || words == "instance of" ||
           words.ends_with(" type");
}

// Breadth-first over the kept edges (either direction) from the seeds: each node reached, its
// distance and the edge that first reached it.
struct Reach {
    std::uint32_t distance = 0;
    std::optional<std::size_t> via;
};

std::unordered_map<std::uint32_t, Reach> reach_from_seeds(const GraphEvidence& ev) {
    std::unordered_map<std::uint32_t, std::vector<std::size_t>> touching;
    for (std::size_t i = 0; i < ev.kept.size(); ++i) {
        touching[ev.kept[i].s].push_back(i);
        if (ev.kept[i].o != ev.kept[i].s) touching[ev.kept[i].o].push_back(i);
    }
    std::unordered_map<std::uint32_t, Reach> reached;
    std::deque<std::uint32_t> queue;
    for (const auto seed : ev.seeds) {
        if (reached.emplace(seed, Reach{}).second) queue.push_back(seed);
    }
    while (!queue.empty()) {
        const auto node = queue.front();
        queue.pop_front();
        const auto it = touching.find(node);
        if (it == touching.end()) continue;
        for (const auto e : it->second) {
            const auto other = ev.kept[e].s == node ? ev.kept[e].o : ev.kept[e].s;
            if (reached.emplace(other, Reach{reached[node].distance + 1, e}).second)
                queue.push_back(other);
        }
    }
    return reached;
}

// The kept-edge end the short answer names: an end of an edge it cites first, else of any.
std::optional<std::uint32_t> answer_node(const GraphEvidence& ev, const std::string& answer) {
    const auto names = [&](std::size_t e) -> std::optional<std::uint32_t> {
        if (folded(ev.kept[e].o_label) == answer) return ev.kept[e].o;
        if (folded(ev.kept[e].s_label) == answer) return ev.kept[e].s;
        return std::nullopt;
    };
    for (const auto e : ev.answer_edges) {
        if (e < ev.kept.size())
            if (auto node = names(e)) return node;
    }
    for (std::size_t e = 0; e < ev.kept.size(); ++e) {
        if (auto node = names(e)) return node;
    }
    return std::nullopt;
}

// Edge scores around the answer: the edge that reached it against the best edge reaching
// another node as far from the seeds (a rival answer).
struct Rivals {
    double answer_score = 0.0;
    double best_rival = 0.0;
    std::size_t rivals = 0;
};

Rivals rivals_of(const GraphEvidence& ev, const std::unordered_map<std::uint32_t, Reach>& reach,
                 std::uint32_t node) {
    Rivals r;
    const auto at = reach.find(node);
    if (at == reach.end() || !at->second.via) {
        for (const auto& e : ev.kept) {
            if (e.s == node || e.o == node) r.answer_score = std::max(r.answer_score, e.score);
        }
        return r;
    }
    r.answer_score = ev.kept[*at->second.via].score;
    for (const auto& [other, how] : reach) {
        if (other == node || how.distance != at->second.distance || !how.via) continue;
        ++r.rivals;
        r.best_rival = std::max(r.best_rival, ev.kept[*how.via].score);
    }
    return r;
}

}  // namespace

EvidenceFeatures graph_features(const GraphEvidence& ev) {
    const std::string answer = folded(ev.short_answer.value_or(""));
    const auto reach = reach_from_seeds(ev);
    const auto node = answer.empty() ? std::nullopt : answer_node(ev, answer);
    const auto at = node ? reach.find(*node) : reach.end();
    const bool linked = at != reach.end();
    const bool is_seed =
        node && std::find(ev.seeds.begin(), ev.seeds.end(), *node) != ev.seeds.end();
    // The path from a seed to the answer, and what it says and rests on.
    std::set<std::string> said;
    std::unordered_set<std::string> sources;
    int weakest = 0;
    bool via_type = false;
    if (linked && at->second.via) via_type = is_type_predicate(ev.kept[*at->second.via].p_label);
    for (auto step = linked ? at->second.via : std::nullopt; step;) {
        const auto& e = ev.kept[*step];
        for (const auto* label : {&e.s_label, &e.p_label, &e.o_label}) {
            const auto stems = content_stems(*label);
            said.insert(stems.begin(), stems.end());
        }
        sources.insert(e.sources.begin(), e.sources.end());
        weakest = std::max(weakest, e.tier);
        const auto from = reach.at(e.s).distance < reach.at(e.o).distance ? e.s : e.o;
        step = reach.at(from).via;
    }
    const Rivals rivals = node ? rivals_of(ev, reach, *node) : Rivals{};
    const auto expected = reasoner::question_expectation(ev.question);
    const double hops = linked ? static_cast<double>(at->second.distance) : 0.0;
    // Only hops beyond every relation word count: the question's relation words include class
    // words ("the shipyard that built X"), so fewer hops than words is no sign of anything.
    const double excess = linked && expected.relations > 0
                              ? std::max(0.0, hops - static_cast<double>(expected.relations))
                              : 0.0;
    return {
        {"answered", answer.empty() ? 0.0 : 1.0},
        {"answer_found", node ? 1.0 : 0.0},
        {"answer_is_seed", is_seed ? 1.0 : 0.0},
        {"path_linked", linked && !is_seed ? 1.0 : 0.0},
        {"path_hops", hops},
        {"hop_excess", std::min(excess, 3.0)},
        {"answer_via_type", via_type ? 1.0 : 0.0},
        {"type_mismatch",
         !answer.empty() && reasoner::answer_type_mismatch(ev.question, *ev.short_answer) ? 1.0
                                                                                          : 0.0},
        {"question_coverage", coverage(content_stems(ev.question), said)},
        {"answer_score", rivals.answer_score},
        {"margin", rivals.answer_score - rivals.best_rival},
        {"competitors", std::log1p(static_cast<double>(rivals.rivals))},
        {"path_sources", std::log1p(static_cast<double>(sources.size()))},
        {"weakest_tier", static_cast<double>(weakest)},
        {"seed_match", ev.seed_match},
    };
}

namespace {

bool contains_phrase(std::string_view haystack_folded, const std::string& phrase) {
    if (phrase.empty()) return false;
    const std::string padded = " " + std::string(haystack_folded) + " ";
    return padded.find(" " + phrase + " ") != std::string::npos;
}

// The sentences of `text`: a sentence ends at '.', '!' or '?' before a space or the end.
std::vector<std::string_view> sentences_of(std::string_view text) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = start;
        while (end < text.size() &&
               !((text[end] == '.' || text[end] == '!' || text[end] == '?') &&
                 (end + 1 == text.size() || text[end + 1] == ' ' || text[end + 1] == '\n')))
            ++end;
        end = std::min(end + 1, text.size());
        out.push_back(text.substr(start, end - start));
        start = end;
    }
    return out;
}

// The first sentence of `text` that holds `phrase_folded`, "" when none does.
std::string_view sentence_holding(std::string_view text, const std::string& phrase_folded) {
    for (const auto sentence : sentences_of(text))
        if (contains_phrase(folded(sentence), phrase_folded)) return sentence;
    return {};
}

// True when `answer`, as written, is shaped like a person's name: two to four words, each a
// capitalised word of letters (not an acronym: "MBC FM"), joined by at most one lower-case
// particle ("Ludwig van Beethoven").
bool name_shaped(std::string_view answer) {
    std::size_t words = 0;
    std::size_t particles = 0;
    std::size_t start = 0;
    while (start < answer.size()) {
        std::size_t end = answer.find(' ', start);
        if (end == std::string_view::npos) end = answer.size();
        const auto word = answer.substr(start, end - start);
        start = end + 1;
        if (word.empty()) continue;
        const auto letter = [](char c) {
            return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' ||
                   c == '\'' || static_cast<unsigned char>(c) >= 0x80;
        };
        if (!std::all_of(word.begin(), word.end(), letter)) return false;
        const auto first = static_cast<unsigned char>(word.front());
        if (std::islower(first) != 0) {
            ++particles;
            continue;
        }
        const bool acronym = word.size() > 1 && std::none_of(word.begin(), word.end(), [](char c) {
                                 return std::islower(static_cast<unsigned char>(c)) != 0;
                             });
        if (acronym) return false;
        ++words;
    }
    return words >= 2 && words <= 4 && particles <= 1;
}

// True when the question itself asks who: its first word is "who", "whom" or "whose", or its
// last is "who" or "whom" ("created by who?"). A relative "who" ("Chiang Kai-shek, who died on
// which date?") asks nothing, though the question's analysis may read it as the question word.
bool asks_who(std::string_view question) {
    const auto words = text::words(question);
    if (words.empty()) return false;
    const auto who = [](const std::string& w) { return w == "who" || w == "whom"; };
    return who(words.front()) || words.front() == "whose" || who(words.back());
}

// The rank (from 0) from which a chunk is far down the retrieval: past the five best, where the
// documents a two-hop question needs usually stand (HotpotQA's recall@5 is about 90 %).
constexpr std::size_t kFarChunkRank = 5;

// How far the best kept chunk's score stands above the runner-up's, as a share of the best
// (0 with fewer than two chunks or no positive score).
double retrieval_margin(const std::vector<EvidenceChunk>& kept) {
    double best = 0.0;
    double second = 0.0;
    for (const auto& c : kept) {
        if (c.score > best) {
            second = best;
            best = c.score;
        } else if (c.score > second) {
            second = c.score;
        }
    }
    return kept.size() < 2 || best <= 0.0 ? 0.0 : (best - second) / best;
}

// Where in the retrieval the short answer is read: the first kept chunk its citations name, its
// rank (0: the best chunk) and its score as a share of the best chunk's. A multi-hop question
// names its first entity, whose document retrieval ranks first; an answer read there stopped a
// hop short, and one read far down the ranking rests on a passage weakly tied to the question.
struct AnswerChunk {
    std::optional<std::size_t> rank;
    double score_share = 0.0;
};

// A question that chains relations past one hop: its relation chain (question analysis) has at
// least two mentions ("the shipyard that built X": shipyard, built). The chain counts the class
// word of "which X" too, so "Which shipyard built X?" reads as chained; 3 was tried (one-hop
// which-X questions then not chained) and cross-validated worse on HotpotQA (log-loss 0.558
// against 0.511: its two-relation comparisons then need a feature of their own), and so did
// leaving the class word out of the count (2026-12-02, issue 35: HotpotQA's which-X questions
// are two-hop, so it unchains two of them and the fit's log-loss over its short answers rises
// from 0.310 to 0.335).
constexpr std::size_t kChainedRelations = 2;

bool chained(const reasoner::QuestionExpectation& expectation) {
    return expectation.relations >= kChainedRelations;
}

AnswerChunk answer_chunk(const DocumentEvidence& ev) {
    AnswerChunk out;
    const auto cited = std::find_if(ev.answer_chunks.begin(), ev.answer_chunks.end(),
                                    [&](std::size_t i) { return i < ev.kept.size(); });
    if (cited == ev.answer_chunks.end()) return out;
    out.rank = *cited;
    double best = 0.0;
    for (const auto& c : ev.kept) best = std::max(best, c.score);
    out.score_share = best > 0.0 ? std::clamp(ev.kept[*cited].score / best, 0.0, 1.0) : 0.0;
    return out;
}

}  // namespace

schema::explain::AnswerCompleteness graph_completeness(const GraphEvidence& ev,
                                                       std::string_view answer_text) {
    schema::explain::AnswerCompleteness c;
    // What the facts state: their predicates, and the names of their ends ("the shipyard that
    // built X" is covered by a node called "Brenn and Daughters Shipyard").
    std::vector<std::string> statements;
    for (const auto e : ev.answer_edges) {
        if (e >= ev.kept.size()) continue;
        statements.push_back(ev.kept[e].p_label);
        statements.push_back(ev.kept[e].s_label);
        statements.push_back(ev.kept[e].o_label);
    }
    for (auto& part : reasoner::question_parts(ev.question, statements)) {
        if (part.covered) c.covered.push_back(part.words);
        c.asked.push_back(std::move(part.words));
    }
    c.list = reasoner::question_expectation(ev.question).list;
    if (!c.list || !ev.short_answer || ev.short_answer->empty()) return c;
    const std::string short_answer = folded(*ev.short_answer);
    const std::string text = folded(answer_text);
    std::set<std::pair<std::uint32_t, std::string>> stars;  // the node and predicate
    for (const auto e : ev.answer_edges) {
        if (e >= ev.kept.size()) continue;
        const auto& a = ev.kept[e];
        if (contains_phrase(short_answer, folded(a.o_label))) stars.emplace(a.s, folded(a.p_label));
        if (contains_phrase(short_answer, folded(a.s_label))) stars.emplace(a.o, folded(a.p_label));
    }
    std::set<std::uint32_t> found;
    std::set<std::uint32_t> named;
    for (const auto& e : ev.kept) {
        for (const bool from_s : {true, false}) {
            const auto hub = from_s ? e.s : e.o;
            if (!stars.contains({hub, folded(e.p_label)})) continue;
            const auto far = from_s ? e.o : e.s;
            found.insert(far);
            if (contains_phrase(text, folded(from_s ? e.o_label : e.s_label))) named.insert(far);
        }
    }
    c.answers_found = found.size();
    c.answers_named = named.size();
    return c;
}

std::vector<EdgeConflict> graph_conflicts(const GraphEvidence& ev) {
    std::vector<EdgeConflict> out;
    if (!ev.short_answer || ev.short_answer->empty() ||
        reasoner::question_expectation(ev.question).list)
        return out;
    // Per source, subject and predicate: the objects it gives.
    std::map<std::tuple<std::string, std::uint32_t, std::string>, std::set<std::uint32_t>> given;
    for (const auto& e : ev.kept)
        for (const auto& source : e.sources) given[{source, e.s, folded(e.p_label)}].insert(e.o);
    std::set<std::string> multi_valued;
    for (const auto& [key, objects] : given)
        if (objects.size() > 1) multi_valued.insert(std::get<2>(key));
    const auto shares_source = [](const EvidenceEdge& x, const EvidenceEdge& y) {
        return std::any_of(x.sources.begin(), x.sources.end(), [&](const std::string& s) {
            return std::find(y.sources.begin(), y.sources.end(), s) != y.sources.end();
        });
    };
    for (const auto a : ev.answer_edges) {
        if (a >= ev.kept.size()) continue;
        const auto& x = ev.kept[a];
        const std::string p = folded(x.p_label);
        if (x.sources.empty() || is_type_predicate(x.p_label) || multi_valued.contains(p)) continue;
        for (std::size_t r = 0; r < ev.kept.size(); ++r) {
            const auto& y = ev.kept[r];
            if (r == a || y.s != x.s || y.o == x.o || folded(y.p_label) != p || y.sources.empty() ||
                shares_source(x, y))
                continue;
            const bool rival_cited = std::find(ev.answer_edges.begin(), ev.answer_edges.end(), r) !=
                                     ev.answer_edges.end();
            if (rival_cited && r < a) continue;  // that pair is already listed
            out.push_back({a, r});
        }
    }
    return out;
}

namespace {

// How well the kept edges support `subject` having `object` by predicate `p` (folded): their
// distinct sources, and the best tier among them (0: none known).
std::pair<std::size_t, int> support_of(const GraphEvidence& ev, std::uint32_t subject,
                                       const std::string& p, std::uint32_t object) {
    std::set<std::string> sources;
    int tier = 0;
    for (const auto& e : ev.kept) {
        if (e.s != subject || e.o != object || folded(e.p_label) != p) continue;
        sources.insert(e.sources.begin(), e.sources.end());
        if (e.tier > 0 && (tier == 0 || e.tier < tier)) tier = e.tier;
    }
    return {sources.size(), tier};
}

// True when support `a` is better than `b`: more sources, then a better (lower, known) tier.
bool better_supported(std::pair<std::size_t, int> a, std::pair<std::size_t, int> b) {
    if (a.first != b.first) return a.first > b.first;
    return a.second > 0 && (b.second == 0 || a.second < b.second);
}

}  // namespace

std::optional<DisputedValues> listed_disputed_values(const GraphEvidence& ev) {
    const auto conflicts = graph_conflicts(ev);
    const auto cited = [&](std::size_t k) {
        return std::find(ev.answer_edges.begin(), ev.answer_edges.end(), k) !=
               ev.answer_edges.end();
    };
    const auto first = std::find_if(conflicts.begin(), conflicts.end(),
                                    [&](const EdgeConflict& c) { return cited(c.rival); });
    if (first == conflicts.end()) return std::nullopt;
    const auto& x = ev.kept[first->stated];
    const std::string p = folded(x.p_label);
    std::set<std::size_t> disputed;  // kept order
    for (const auto& c : conflicts) {
        const auto& y = ev.kept[c.stated];
        if (!cited(c.rival) || y.s != x.s || folded(y.p_label) != p) continue;
        disputed.insert(c.stated);
        disputed.insert(c.rival);
    }
    std::vector<DisputedValue> values;
    std::vector<std::uint32_t> objects;
    for (const std::size_t k : disputed) {
        const auto at = std::find(objects.begin(), objects.end(), ev.kept[k].o);
        if (at == objects.end()) {
            objects.push_back(ev.kept[k].o);
            values.push_back({ev.kept[k].o_label, {k}});
        } else {
            values[static_cast<std::size_t>(at - objects.begin())].edges.push_back(k);
        }
    }
    if (values.size() < 2) return std::nullopt;
    std::size_t best = 0;
    for (std::size_t v = 1; v < values.size(); ++v)
        if (better_supported(support_of(ev, x.s, p, objects[v]),
                             support_of(ev, x.s, p, objects[best])))
            best = v;
    DisputedValues out;
    out.stated = values[best];
    for (std::size_t v = 0; v < values.size(); ++v)
        if (v != best) out.rivals.push_back(std::move(values[v]));
    return out;
}

namespace {

// True when `listing` names exactly the disputed values, joined by commas and "and".
bool lists_only(std::string_view listing, const DisputedValues& disputed) {
    std::string rest(listing);
    const auto take = [&](const std::string& value) {
        const auto at = rest.find(value);
        if (value.empty() || at == std::string::npos) return false;
        rest.replace(at, value.size(), ",");
        return true;
    };
    if (!take(disputed.stated.value)) return false;
    for (const auto& r : disputed.rivals)
        if (!take(r.value)) return false;
    std::replace(rest.begin(), rest.end(), ',', ' ');
    const auto words = text::words(rest);
    return std::all_of(words.begin(), words.end(), [](const std::string& w) { return w == "and"; });
}

std::string markers_of(const DisputedValue& v,
                       const std::function<std::string(std::size_t)>& id_of) {
    std::string out;
    for (const auto k : v.edges) out += "[" + id_of(k) + "]";
    return out;
}

}  // namespace

std::optional<std::string> restate_disputed(std::string_view marked_text, std::string_view listing,
                                            const DisputedValues& disputed,
                                            const std::function<std::string(std::size_t)>& id_of) {
    if (disputed.rivals.empty() || !lists_only(listing, disputed)) return std::nullopt;
    const auto at = marked_text.find(listing);
    if (at == std::string_view::npos) return std::nullopt;
    std::string text(marked_text);
    text.replace(at, listing.size(), disputed.stated.value);
    for (const auto& r : disputed.rivals) {
        for (const auto k : r.edges) {
            const std::string marker = "[" + id_of(k) + "]";
            for (auto m = text.find(marker); m != std::string::npos; m = text.find(marker, m)) {
                text.erase(m, marker.size());
                // The space before it goes too unless another marker follows ("1879 [e2]").
                const bool group_goes_on = m < text.size() && text[m] == '[';
                if (m > 0 && text[m - 1] == ' ' && !group_goes_on) text.erase(--m, 1);
            }
        }
    }
    // The sentence that names the value ends at a '.' before a space, a line end or the end.
    std::size_t end = at + disputed.stated.value.size();
    while (end < text.size() && text[end] != '\n' &&
           !(text[end] == '.' &&
             (end + 1 == text.size() || text[end + 1] == ' ' || text[end + 1] == '\n')))
        ++end;
    std::string clause =
        disputed.rivals.size() == 1 ? "; another source gives " : "; other sources give ";
    for (std::size_t i = 0; i < disputed.rivals.size(); ++i) {
        if (i > 0) clause += i + 1 == disputed.rivals.size() ? " and " : ", ";
        clause += disputed.rivals[i].value + " " + markers_of(disputed.rivals[i], id_of);
    }
    text.insert(end, clause);
    return text;
}

std::string completeness_note(const schema::explain::AnswerCompleteness& c) {
    std::string note;
    if (!c.covered.empty() && c.covered.size() < c.asked.size()) {
        std::vector<std::string> missing;
        for (const auto& part : c.asked)
            if (std::find(c.covered.begin(), c.covered.end(), part) == c.covered.end())
                missing.push_back(part);
        note = "Nothing found says ";
        for (std::size_t i = 0; i < missing.size(); ++i)
            note += (i == 0 ? "" : i + 1 == missing.size() ? " or " : ", ") + missing[i];
        note += ".";
    }
    if (c.list && c.answers_named < c.answers_found) {
        note += (note.empty() ? "" : " ") + std::string("The facts found have ") +
                std::to_string(c.answers_found) + " answers; " +
                std::to_string(c.answers_found - c.answers_named) + " are not named above.";
    }
    return note;
}

EvidenceFeatures document_features(const DocumentEvidence& ev) {
    const std::string answer = folded(ev.short_answer.value_or(""));
    const bool yes_no = answer == "yes" || answer == "no";
    std::vector<std::string> chunk_text;
    for (const auto& c : ev.kept) chunk_text.push_back(folded(c.text));
    std::set<std::string> documents;
    std::optional<std::size_t> first;
    for (std::size_t i = 0; i < ev.kept.size() && !yes_no; ++i) {
        if (!contains_phrase(chunk_text[i], answer)) continue;
        documents.insert(ev.kept[i].document);
        if (!first) first = i;
    }
    // What the answer stands on: the chunks its short answer cites, else those its text cites,
    // else the first one it was given.
    std::vector<std::size_t> grounds =
        !ev.answer_chunks.empty() ? ev.answer_chunks : ev.cited_chunks;
    if (grounds.empty() && !ev.kept.empty()) grounds.push_back(0);
    std::set<std::string> said;
    std::set<std::string> cited_documents;
    for (const auto i : grounds) {
        if (i >= ev.kept.size()) continue;
        const auto stems = content_stems(ev.kept[i].text);
        said.insert(stems.begin(), stems.end());
        cited_documents.insert(ev.kept[i].document);
    }
    const auto answer_stems = content_stems(answer);
    const auto question_stems = content_stems(ev.question);
    const auto expectation = reasoner::question_expectation(ev.question);
    const bool in_question =
        !answer_stems.empty() &&
        std::all_of(answer_stems.begin(), answer_stems.end(),
                    [&](const std::string& w) { return question_stems.contains(w); });
    double words = 0.0;
    text::for_each_word(answer, [&](std::string_view) { words += 1.0; });
    // The sentence that states the answer: in the first chunk it stands on that holds it, else
    // in the first chunk that does.
    std::string_view stating;
    std::vector<std::size_t> holders = grounds;
    if (first) holders.push_back(*first);
    for (const auto i : holders) {
        if (i >= ev.kept.size() || yes_no || answer.empty()) continue;
        stating = sentence_holding(ev.kept[i].text, answer);
        if (!stating.empty()) break;
    }
    const bool titled = !yes_no && !answer.empty() &&
                        std::any_of(ev.kept.begin(), ev.kept.end(), [&](const auto& c) {
                            const std::string title = folded(c.title);
                            return !title.empty() && (contains_phrase(title, answer) ||
                                                      contains_phrase(answer, title));
                        });
    const bool who_not_name = !answer.empty() && !yes_no && expectation.agent &&
                              asks_who(ev.question) && !name_shaped(*ev.short_answer);
    // Yes and no are not read from a passage: their chunk says nothing of where an answer stands.
    const auto from = answer.empty() || yes_no ? AnswerChunk{} : answer_chunk(ev);
    return {
        {"answered", answer.empty() ? 0.0 : 1.0},
        {"yes_no", yes_no ? 1.0 : 0.0},
        {"yes_no_question", expectation.yes_no ? 1.0 : 0.0},
        {"answer_in_question", in_question ? 1.0 : 0.0},
        {"type_mismatch",
         !answer.empty() && reasoner::answer_type_mismatch(ev.question, *ev.short_answer) ? 1.0
                                                                                          : 0.0},
        {"answer_words", std::min(words, 10.0)},
        {"answer_documents", std::log1p(static_cast<double>(documents.size()))},
        {"answer_rank", first ? 1.0 / static_cast<double>(*first + 1) : 0.0},
        {"question_coverage", coverage(question_stems, said)},
        {"cited_documents", static_cast<double>(cited_documents.size())},
        {"sentence_coverage", coverage(question_stems, content_stems(stating))},
        {"retrieval_margin", retrieval_margin(ev.kept)},
        {"answer_titled", titled ? 1.0 : 0.0},
        {"who_not_name", who_not_name ? 1.0 : 0.0},
        {"answer_top_chunk", from.rank == std::size_t{0} ? 1.0 : 0.0},
        {"answer_far_chunk", from.rank && *from.rank >= kFarChunkRank ? 1.0 : 0.0},
        {"answer_chunk_share", from.score_share},
        {"answer_top_chunk_chained",
         from.rank == std::size_t{0} && chained(expectation) ? 1.0 : 0.0},
        {"withheld", 0.0},
    };
}

bool withhold_weak_short_answer(SynthesisResult& synthesised, EvidenceFeatures& features,
                                std::string_view engine, double floor) {
    const auto* calibrator = reasoner::shipped_calibrator(engine);
    if (floor <= 0.0 || calibrator == nullptr || !calibrator->withhold_below) return false;
    const std::string answer = folded(synthesised.short_answer.value_or(""));
    if (answer.empty() || answer == "yes" || answer == "no") return false;
    if (reasoner::calibrate(*calibrator, features).probability >= *calibrator->withhold_below)
        return false;
    synthesised.short_answer.reset();
    synthesised.short_answer_ids.clear();
    for (auto& f : features) {
        if (f.name == "answered") f.value = 0.0;
        if (f.name == "withheld") f.value = 1.0;
    }
    return true;
}

std::vector<ChunkConflict> document_conflicts(const DocumentEvidence& ev) {
    const auto expectation = reasoner::question_expectation(ev.question);
    const bool times = expectation.time;
    if (!(times || expectation.number) || expectation.list || !ev.short_answer) return {};
    const std::string answer = folded(*ev.short_answer);
    if (answer.empty() || reasoner::stated_values(*ev.short_answer, times).empty()) return {};
    // The sentence that states the answer, in a chunk it cites, else the first that holds it.
    std::vector<std::size_t> holders = ev.answer_chunks;
    for (std::size_t i = 0; i < ev.kept.size(); ++i) holders.push_back(i);
    std::optional<std::size_t> stated;
    std::string_view stating;
    for (const auto i : holders) {
        if (i >= ev.kept.size()) continue;
        stating = sentence_holding(ev.kept[i].text, answer);
        if (!stating.empty()) {
            stated = i;
            break;
        }
    }
    if (!stated) return {};
    // The slot: the question's words that sentence states besides the value (its subject and
    // relation). Two are needed, so that a rival sentence is about the same thing.
    const auto answer_stems = content_stems(answer);
    std::vector<std::string> slot;
    const auto stating_stems = content_stems(stating);
    std::set<std::string> seen;
    for (const auto& word : text::words(ev.question)) {
        if (text::is_stopword(word)) continue;
        auto stem = text::stem(word);
        if (stating_stems.contains(stem) && !answer_stems.contains(stem) &&
            seen.insert(stem).second)
            slot.push_back(std::move(stem));
    }
    if (slot.size() < 2) return {};
    for (std::size_t j = 0; j < ev.kept.size(); ++j) {
        if (ev.kept[j].document == ev.kept[*stated].document) continue;
        for (const auto sentence : sentences_of(ev.kept[j].text)) {
            const std::string words = folded(sentence);
            if (contains_phrase(words, answer)) continue;
            const auto stems = content_stems(sentence);
            if (!std::all_of(slot.begin(), slot.end(),
                             [&](const std::string& w) { return stems.contains(w); }))
                continue;
            // One value of the kind asked, not a part of the answer nor containing it ("1975" and
            // "April 5, 1975" agree).
            const auto values = reasoner::stated_values(sentence, times);
            if (values.size() != 1) continue;
            const std::string value = folded(values.front());
            if (contains_phrase(value, answer) || contains_phrase(answer, value)) continue;
            std::string slot_words;
            for (const auto& w : slot) slot_words += (slot_words.empty() ? "" : " ") + w;
            return {{*stated, j, *ev.short_answer, values.front(), slot_words}};
        }
    }
    return {};
}

schema::explain::AnswerConfidence answer_confidence(const reasoner::EvidenceFeatures& features,
                                                    std::string_view engine) {
    return reasoner::stated_confidence(features, engine);
}

std::optional<SynthesisResult> abstained_answer(const SynthesisResult& synthesised,
                                                const schema::explain::AnswerConfidence& confidence,
                                                double floor) {
    if (!reasoner::below_floor(confidence, floor)) return std::nullopt;
    const auto worst = reasoner::most_lowering_feature(confidence);
    // graph-rag's and document-rag's features share their words (reasoner::doubt_words).
    const std::string why =
        worst ? std::string(reasoner::doubt_words("graph-rag", *worst)) : "its evidence is weak";
    std::string note =
        reasoner::abstention_note(confidence, floor, synthesised.short_answer.value_or(""), why);
    SynthesisResult out = synthesised;
    out.short_answer = std::string();
    out.short_answer_ids.clear();
    if (synthesised.answer.empty()) {
        out.answer = note;
        return out;
    }
    note += reasoner::kWhatWasFound;
    const auto shift = base::count_code_points(note);
    out.answer = note + synthesised.answer;
    for (auto& c : out.citations) {
        c.start += shift;
        c.end += shift;
    }
    return out;
}

void add_confidence(nlohmann::json& final, const schema::explain::AnswerConfidence& confidence) {
    reasoner::add_confidence_fields(final, confidence);
    if (const auto& c = confidence.completeness) {
        final["completeness"] = {{"asked", c->asked},
                                 {"covered", c->covered},
                                 {"list", c->list},
                                 {"answers_found", c->answers_found},
                                 {"answers_named", c->answers_named}};
    }
}

}  // namespace glassbox::rag
