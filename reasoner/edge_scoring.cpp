// The extractive model's edge scoring and reasoning: relation words against predicates, entity
// anchors, paths from the named entities. Deterministic: ties broken by input order.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "text/similarity.hpp"
#include "text/stopwords.hpp"
#include "text/tokenize.hpp"
#include "workers/llm/extractive_model.hpp"
#include "workers/llm/extractive_question.hpp"
#include "workers/llm/question_intent.hpp"
#include "workers/llm/relation_cues.hpp"

namespace glassbox::llm {

namespace {

using detail::analyze_question;
using detail::QuestionAnalysis;
using text::lower;
using text::normalize;

struct Mention {
    std::string normalized;
    double weight = 1.0;
};

// How strongly a node label is one of the question's entity mentions: 1 exact; 0.9 written in
// the question; else a close spelling. Sets `which` to the mention matched, or, for a label
// written in the question but among no mentions, to mentions.size() + own_slot.
double anchor_strength(const std::string& label_norm, const std::vector<Mention>& mentions,
                       const std::string& question_norm, std::size_t own_slot, std::size_t& which) {
    double best = 0.0;
    which = mentions.size();
    if (label_norm.empty()) return 0.0;
    for (std::size_t i = 0; i < mentions.size(); ++i) {
        const auto& m = mentions[i];
        double s = 0.0;
        if (label_norm == m.normalized) {
            s = 1.0;
        } else if (label_norm.size() >= 6 && m.normalized.size() >= 6) {
            const double sim = text::trigram_similarity(label_norm, m.normalized);
            if (sim >= 0.8) s = 0.85 * sim;
        }
        s *= m.weight;
        if (s > best) {
            best = s;
            which = i;
        }
    }
    if (best < 0.9 && label_norm.size() >= 3 && !text::is_stopword(label_norm)) {
        const std::string padded = " " + question_norm + " ";
        if (padded.find(" " + label_norm + " ") != std::string::npos) {
            // Written in the question but not among the mentions: its own mention slot.
            best = 0.9;
            which = mentions.size() + own_slot;
        }
    }
    return best;
}

struct GraphEdge {
    std::size_t from = 0;
    std::size_t to = 0;
    std::size_t predicate = 0;
};

// The best anchored path found for an edge: the named entity it starts from and its edges.
struct BestPath {
    std::string start;
    std::vector<std::size_t> edges;
};

// Edges between the same two nodes whose predicates the question reads alike, walked once.
struct Link {
    std::size_t a = 0;
    std::size_t b = 0;
    std::size_t cls = 0;             // the predicates' class (same match to every relation word)
    std::vector<std::size_t> edges;  // input order; the first stands for the link on a path
};

// A two-link path that ended at a last-hop group, and the score it gives the group's links.
struct PendingLastHop {
    double score = 0.0;
    std::uint64_t order = 0;  // when it was found
    std::size_t first_link = 0;
    std::size_t second_link = 0;
    std::size_t start = 0;   // its nodes before the group's own
    std::size_t middle = 0;
};

// A node's links that, as a path's last hop, all add the same: their predicates read alike and
// their far ends are the same named-entity mention (or none).
struct LastHopGroup {
    std::vector<std::size_t> links;  // adjacency order
    std::vector<PendingLastHop> pending;
};

// The path search's work, bounded (links looked at, groups scored), with the caller's cancel
// check asked every few thousand steps.
class SearchBudget {
public:
    static constexpr std::uint64_t kMaxSteps = 2'000'000;
    static constexpr std::uint64_t kCheckEvery = 4'096;

    explicit SearchBudget(const CancelCheck* cancelled) : cancelled_(cancelled) {}

    // Counts one step; true once the budget is spent or the caller cancelled (stop searching).
    bool spent() {
        if (stopped_) return true;
        if (++steps_ > kMaxSteps) {
            stopped_ = true;
        } else if (steps_ % kCheckEvery == 0) {
            poll();
        }
        return stopped_;
    }
    // Asks the caller now; true when cancelled.
    bool poll() {
        if (!cancelled_flag_ && cancelled_ != nullptr && *cancelled_ && (*cancelled_)())
            cancelled_flag_ = stopped_ = true;
        return cancelled_flag_;
    }
    bool cancelled() const noexcept { return cancelled_flag_; }

private:
    const CancelCheck* cancelled_;
    std::uint64_t steps_ = 0;
    bool stopped_ = false;
    bool cancelled_flag_ = false;
};

// score_edges, also reporting each edge's best path when `paths` is given; nullopt when
// cancelled.
std::optional<std::vector<double>> score_with_paths(std::string_view question,
                                                    const std::vector<std::string>& concepts,
                                                    const std::vector<LabelledEdge>& edges,
                                                    const std::vector<double>* embedding_similarity,
                                                    std::vector<BestPath>* paths,
                                                    const CancelCheck* cancelled) {
    const auto analysis = analyze_question(question);
    const auto rel = question_relations(analysis);
    const double rel_total = rel.total_weight;
    SearchBudget budget{cancelled};

    // Entity mentions: the question's own, then the caller's concepts (less weight further down).
    std::vector<Mention> mentions;
    std::set<std::string> mention_seen;
    for (const auto& c : analysis.candidates) {
        if (!c.entity) continue;
        auto n = normalize(c.text);
        if (mention_seen.insert(n).second) mentions.push_back({std::move(n), 1.0});
    }
    for (std::size_t i = 0; i < concepts.size(); ++i) {
        auto n = normalize(concepts[i]);
        if (n.empty() || !mention_seen.insert(n).second) continue;
        mentions.push_back({std::move(n), std::max(0.75, 0.95 - 0.03 * static_cast<double>(i))});
    }
    std::string question_norm = normalize(question);
    const QuestionIntent intent = question_intent(question, analysis);

    // Nodes and predicates, each label once.
    std::vector<std::string> node_norms;
    std::vector<std::string> node_labels;  // as first written
    std::unordered_map<std::string, std::size_t> node_index;
    const auto node = [&](const std::string& label) {
        auto n = normalize(label);
        auto [it, inserted] = node_index.emplace(n, node_norms.size());
        if (inserted) {
            node_norms.push_back(std::move(n));
            node_labels.push_back(label);
        }
        return it->second;
    };
    std::vector<PredicateMatch> predicate_matches;
    std::unordered_map<std::string, std::size_t> predicate_index;
    std::vector<GraphEdge> graph;
    graph.reserve(edges.size());
    for (const auto& e : edges) {
        if (graph.size() % SearchBudget::kCheckEvery == 0 && budget.poll()) return std::nullopt;
        GraphEdge g;
        g.from = node(e.s);
        g.to = node(e.o);
        auto [it, inserted] = predicate_index.emplace(lower(e.p), predicate_matches.size());
        if (inserted) predicate_matches.push_back(mention_match(e.p, rel));
        g.predicate = it->second;
        graph.push_back(g);
    }
    std::vector<double> anchor(node_norms.size(), 0.0);
    std::vector<std::size_t> anchor_mention(node_norms.size(), 0);
    std::set<std::size_t> mentions_present;
    for (std::size_t n = 0; n < node_norms.size(); ++n) {
        if (n % SearchBudget::kCheckEvery == 0 && budget.poll()) return std::nullopt;
        anchor[n] = anchor_strength(node_norms[n], mentions, question_norm, n, anchor_mention[n]);
        if (anchor[n] >= 0.8) mentions_present.insert(anchor_mention[n]);
    }
    // Nodes of the wrong type for the answer the question expects (a year for "who", a name for
    // "when"): a path ending there is not the answer, so it counts less.
    constexpr double kWrongTypeFactor = 0.6;
    std::vector<char> wrong_type(node_norms.size(), 0);
    for (std::size_t n = 0; n < node_norms.size(); ++n)
        wrong_type[n] = answer_type_mismatch(intent, node_labels[n]) ? 1 : 0;

    // Edges joining the same two nodes through predicates the question reads alike (the same
    // match against every relation word) score alike on every path: the search walks each such
    // bundle, a link, once. Loops lie on no path.
    std::map<std::vector<std::vector<double>>, std::size_t> class_index;
    std::vector<std::size_t> predicate_class(predicate_matches.size());
    for (std::size_t p = 0; p < predicate_matches.size(); ++p)
        predicate_class[p] =
            class_index.emplace(predicate_matches[p].by_word, class_index.size()).first->second;
    constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
    std::vector<Link> links;
    std::vector<std::size_t> link_of(edges.size(), kNone);
    std::map<std::tuple<std::size_t, std::size_t, std::size_t>, std::size_t> link_index;
    std::vector<std::vector<std::size_t>> adjacency(node_norms.size());  // links, input order
    std::vector<std::size_t> degree(node_norms.size(), 0);              // edges
    for (std::size_t i = 0; i < graph.size(); ++i) {
        const auto& g = graph[i];
        ++degree[g.from];
        if (g.to == g.from) continue;
        ++degree[g.to];
        const std::size_t cls = predicate_class[g.predicate];
        auto [it, inserted] = link_index.emplace(
            std::tuple{std::min(g.from, g.to), std::max(g.from, g.to), cls}, links.size());
        if (inserted) {
            links.push_back(Link{g.from, g.to, cls, {}});
            adjacency[g.from].push_back(it->second);
            adjacency[g.to].push_back(it->second);
        }
        links[it->second].edges.push_back(i);
        link_of[i] = it->second;
    }
    const auto far_end = [&](std::size_t l, std::size_t here) {
        return links[l].a == here ? links[l].b : links[l].a;
    };

    // A named entity with many edges here (a position, a country) says less about which of
    // them matter than one with few: with two named entities, the rarer one's edges lead.
    std::vector<double> specificity(node_norms.size(), 1.0);
    if (mentions_present.size() > 1) {
        for (std::size_t n = 0; n < node_norms.size(); ++n) {
            const double degree_here = static_cast<double>(degree[n]);
            specificity[n] = 1.0 / (1.0 + 0.05 * std::log1p(degree_here));
        }
    }

    // Paths from each anchor, up to three edges: a path earns the share of the question's
    // relation words its predicates express (each predicate taking each meaning once), loses
    // for edges that neither express a new relation word nor reach another named entity, and
    // gains for every named entity it connects. Each edge keeps its best path's score (the
    // first found among equals).
    constexpr std::size_t kMaxDepth = 3;
    constexpr std::size_t kMaxExpansions = 200'000;
    std::size_t expansions = 0;
    std::vector<std::size_t> path_edges;  // each link's first edge
    std::vector<std::size_t> path_links;
    std::vector<std::size_t> path_nodes;
    const auto score_path = [&](double start_anchor) {
        const auto& mentions_q = rel.mentions;
        std::vector<bool> taken(mentions_q.size(), false);
        double covered = 0.0;
        std::size_t justified = 0;
        std::set<std::size_t> mentions_on_path;
        mentions_on_path.insert(anchor_mention[path_nodes.front()]);
        for (std::size_t k = 0; k < path_edges.size(); ++k) {
            const auto& match = predicate_matches[graph[path_edges[k]].predicate];
            // Each word of the predicate answers one mention, and an edge takes each relation
            // key once: a spouse edge answers one "spouse"; "plays position" answers "plays"
            // and "position", not also "club". Best pairs first.
            std::vector<std::tuple<double, std::size_t, std::size_t>>
                pairs;  // value, word, mention
            for (std::size_t w = 0; w < match.by_word.size(); ++w) {
                for (std::size_t j = 0; j < mentions_q.size(); ++j) {
                    if (!taken[j] && match.by_word[w][j] > 0.0)
                        pairs.emplace_back(mentions_q[j].weight * match.by_word[w][j], w, j);
                }
            }
            std::stable_sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) {
                return std::get<0>(a) > std::get<0>(b);
            });
            std::set<std::string_view> keys_used;
            std::vector<bool> word_used(match.by_word.size(), false);
            bool took = false;
            for (const auto& [value, w, j] : pairs) {
                if (taken[j] || word_used[w] || keys_used.contains(mentions_q[j].key)) continue;
                taken[j] = true;
                word_used[w] = true;
                keys_used.insert(mentions_q[j].key);
                covered += value;
                took = took || mentions_q[j].weight >= 0.5;
            }
            const std::size_t reached = path_nodes[k + 1];
            bool new_anchor = false;
            if (anchor[reached] >= 0.8)
                new_anchor = mentions_on_path.insert(anchor_mention[reached]).second;
            if (took || new_anchor) ++justified;
        }
        const double coverage = rel_total > 0.0 ? std::min(1.0, covered / rel_total) : 1.0;
        const double efficiency =
            static_cast<double>(justified) / static_cast<double>(path_edges.size());
        const double anchors = mentions_present.empty()
                                   ? 1.0
                                   : static_cast<double>(mentions_on_path.size()) /
                                         static_cast<double>(mentions_present.size());
        const double hops = std::pow(0.92, static_cast<double>(path_edges.size() - 1));
        const double fit = wrong_type[path_nodes.back()] ? kWrongTypeFactor : 1.0;
        return start_anchor * (0.25 + 0.75 * coverage) * (0.4 + 0.6 * efficiency) *
               (0.7 + 0.3 * std::min(1.0, anchors)) * hops * fit;
    };

    std::vector<double> link_best(links.size(), 0.0);
    std::vector<std::uint64_t> link_order(links.size(), 0);  // when its best path was found
    std::vector<std::size_t> link_start(links.size(), 0);
    std::vector<std::vector<std::size_t>> link_path(paths != nullptr ? links.size() : 0);
    std::uint64_t order = 0;
    // Credits the path's first `count` links with `s`.
    const auto credit = [&](std::size_t count, double s) {
        for (std::size_t k = 0; k < count; ++k) {
            const std::size_t l = path_links[k];
            if (s <= link_best[l]) continue;
            link_best[l] = s;
            link_order[l] = order;
            link_start[l] = path_nodes.front();
            if (paths != nullptr) link_path[l] = path_links;
        }
    };
    const auto push = [&](std::size_t l) {
        path_nodes.push_back(far_end(l, path_nodes.back()));
        path_links.push_back(l);
        path_edges.push_back(links[l].edges.front());
    };
    const auto pop = [&] {
        path_nodes.pop_back();
        path_links.pop_back();
        path_edges.pop_back();
    };
    const auto on_path = [&](std::size_t node) {
        return std::find(path_nodes.begin(), path_nodes.end(), node) != path_nodes.end();
    };

    // The last hop: from the end of a two-link path, the links whose predicates read alike and
    // whose far ends are the same named-entity mention (or none) add the same score, found once
    // per group; each link of the group takes, after the search, the best such path that does
    // not already pass its far end. Without this a hub (a position every player has) reached
    // by many paths costs paths × degree.
    std::vector<std::vector<LastHopGroup>> last_hops(node_norms.size());
    std::vector<bool> grouped(node_norms.size(), false);
    const auto groups_at = [&](std::size_t here) -> std::vector<LastHopGroup>& {
        if (grouped[here]) return last_hops[here];
        grouped[here] = true;
        std::map<std::tuple<std::size_t, std::size_t, char>, std::size_t> index;
        for (auto l : adjacency[here]) {
            const std::size_t next = far_end(l, here);
            const std::size_t mention = anchor[next] >= 0.8 ? anchor_mention[next] : kNone;
            auto [it, inserted] = index.emplace(
                std::tuple{links[l].cls, mention, wrong_type[next]}, last_hops[here].size());
            if (inserted) last_hops[here].emplace_back();
            last_hops[here][it->second].links.push_back(l);
        }
        return last_hops[here];
    };

    const auto extend = [&](auto&& self, double start_anchor) -> void {
        credit(path_links.size(), score_path(start_anchor));
        ++order;
        if (path_links.size() >= kMaxDepth || ++expansions > kMaxExpansions) return;
        const std::size_t here = path_nodes.back();
        if (path_links.size() + 1 == kMaxDepth) {
            for (auto& group : groups_at(here)) {
                if (budget.spent()) return;
                // At most two of a group's links lead back onto the path (one per path node).
                std::size_t rep = kNone;
                for (auto l : group.links) {
                    if (!on_path(far_end(l, here))) {
                        rep = l;
                        break;
                    }
                }
                if (rep == kNone) continue;
                push(rep);
                const double s = score_path(start_anchor);
                credit(path_links.size() - 1, s);
                pop();
                if (s > 0.0)
                    group.pending.push_back(
                        {s, order, path_links[0], path_links[1], path_nodes[0], path_nodes[1]});
                ++order;
            }
            return;
        }
        for (auto l : adjacency[here]) {
            if (budget.spent()) return;
            if (on_path(far_end(l, here))) continue;
            push(l);
            self(self, start_anchor);
            pop();
        }
    };
    for (std::size_t n = 0; n < node_norms.size() && !budget.spent(); ++n) {
        if (anchor[n] < 0.8) continue;
        for (auto l : adjacency[n]) {
            if (budget.spent()) break;
            path_nodes.assign(1, n);
            path_links.clear();
            path_edges.clear();
            push(l);
            extend(extend, anchor[n] * specificity[n]);
        }
    }
    if (budget.cancelled()) return std::nullopt;

    // Each last-hop link takes the best pending path that does not pass its far end. Pending
    // paths run best first (the first found among equals); a path holds two nodes besides the
    // group's own, so each path is passed over for at most two links.
    for (std::size_t here = 0; here < node_norms.size(); ++here) {
        for (auto& group : last_hops[here]) {
            if (group.pending.empty()) continue;
            std::stable_sort(group.pending.begin(), group.pending.end(),
                             [](const auto& a, const auto& b) { return a.score > b.score; });
            for (auto l : group.links) {
                const std::size_t next = far_end(l, here);
                for (const auto& p : group.pending) {
                    if (p.start == next || p.middle == next) continue;
                    if (p.score > link_best[l] ||
                        (p.score == link_best[l] && p.order < link_order[l])) {
                        link_best[l] = p.score;
                        link_order[l] = p.order;
                        link_start[l] = p.start;
                        if (paths != nullptr) link_path[l] = {p.first_link, p.second_link, l};
                    }
                    break;
                }
            }
        }
    }

    std::vector<double> best(edges.size(), 0.0);
    if (paths != nullptr) paths->assign(edges.size(), BestPath{});
    for (std::size_t i = 0; i < edges.size(); ++i) {
        const std::size_t l = link_of[i];
        if (l == kNone || link_best[l] <= 0.0) continue;
        best[i] = link_best[l];
        if (paths == nullptr) continue;
        auto& out = (*paths)[i];
        out.start = node_labels[link_start[l]];
        for (auto on : link_path[l]) out.edges.push_back(on == l ? i : links[on].edges.front());
    }

    // A floor from the edge's own words against the question, scaled down: all an edge that no
    // anchored path reaches gets.
    std::vector<double> scores(edges.size(), 0.0);
    for (std::size_t i = 0; i < edges.size(); ++i) {
        const auto& match = predicate_matches[graph[i].predicate];
        double covered = 0.0;
        for (std::size_t j = 0; j < rel.mentions.size(); ++j)
            covered += rel.mentions[j].weight * match.best[j];
        const double predicate_share = rel_total > 0.0 ? std::min(1.0, covered / rel_total) : 0.0;
        const double entity = std::max(anchor[graph[i].from], anchor[graph[i].to]);
        const double lexical = 0.2 * predicate_share + 0.2 * entity;
        double score = std::max(best[i], lexical);
        if (embedding_similarity != nullptr && i < embedding_similarity->size()) {
            const double cosine = std::clamp((*embedding_similarity)[i], 0.0, 1.0);
            score = 0.85 * score + 0.15 * cosine;
        }
        score = std::clamp(score, 0.0, 1.0);
        scores[i] = std::round(score * 10'000.0) / 10'000.0;
    }
    return scores;
}

}  // namespace

std::optional<std::vector<double>> ExtractiveModel::score_edges(
    std::string_view question, const std::vector<std::string>& concepts,
    const std::vector<LabelledEdge>& edges, const std::vector<double>* embedding_similarity,
    const CancelCheck& cancelled) const {
    return score_with_paths(question, concepts, edges, embedding_similarity, nullptr, &cancelled);
}

std::optional<std::vector<std::string>> ExtractiveModel::reason_edges(
    std::string_view question, const std::vector<LabelledEdge>& edges,
    const CancelCheck& cancelled) const {
    std::vector<BestPath> paths;
    if (!score_with_paths(question, extract_concepts(question), edges, nullptr, &paths,
                          &cancelled))
        return std::nullopt;
    const auto analysis = analyze_question(question);
    const auto rel = question_relations(analysis);
    std::vector<Mention> mentions;
    for (const auto& c : analysis.candidates)
        if (c.entity) mentions.push_back({normalize(c.text), 1.0});
    const std::string question_norm = normalize(question);

    std::vector<std::string> out;
    out.reserve(edges.size());
    for (std::size_t i = 0; i < edges.size(); ++i) {
        if (i % 1'024 == 0 && cancelled && cancelled()) return std::nullopt;
        const auto& e = edges[i];
        std::vector<std::string> parts;
        std::size_t which = 0;
        const bool subject_named =
            anchor_strength(normalize(e.s), mentions, question_norm, 0, which) >= 0.8;
        const bool object_named =
            anchor_strength(normalize(e.o), mentions, question_norm, 0, which) >= 0.8;
        if (subject_named) parts.push_back("its subject \"" + e.s + "\" is named in the question");
        if (object_named) parts.push_back("its object \"" + e.o + "\" is named in the question");
        // An edge further along a path: where the path starts and the relations it takes.
        const auto& path = paths[i].edges;
        if (!subject_named && !object_named && path.size() >= 2) {
            std::string via;
            for (std::size_t k = 0; k + 1 < path.size() && path[k] != i; ++k)
                via += (via.empty() ? "\"" : ", \"") + edges[path[k]].p + "\"";
            if (!via.empty()) {
                parts.push_back("it is reached from \"" + paths[i].start +
                                "\", named in the question, through " + via);
            }
        }
        const auto rows = predicate_match(e.p, rel.words);
        std::vector<std::string> words;
        for (std::size_t j = 0; j < rel.words.size(); ++j) {
            bool matched = false;
            for (const auto& row : rows) matched = matched || row[j] > 0.0;
            if (matched &&
                std::find(words.begin(), words.end(), rel.words[j].surface) == words.end())
                words.push_back(rel.words[j].surface);
        }
        if (!words.empty()) {
            std::string list;
            for (std::size_t k = 0; k < words.size(); ++k) {
                if (k) list += ", ";
                list += "\"" + words[k] + "\"";
            }
            parts.push_back("its relation \"" + e.p + "\" matches " + list + " in the question");
        }
        std::string reason;
        if (parts.empty()) {
            reason = "\"" + e.s + " " + e.p + " " + e.o +
                     "\" matches no entity or relation word of the question directly; it may "
                     "link entities that do.";
        } else {
            reason = "\"" + e.s + " " + e.p + " " + e.o + "\": ";
            for (std::size_t k = 0; k < parts.size(); ++k) {
                if (k) reason += k + 1 == parts.size() ? " and " : ", ";
                reason += parts[k];
            }
            reason += ".";
        }
        out.push_back(std::move(reason));
    }
    return out;
}

}  // namespace glassbox::llm
