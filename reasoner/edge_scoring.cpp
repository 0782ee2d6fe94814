// The extractive model's edge scoring and reasoning: relation words against predicates, entity
// anchors, paths from the named entities. Deterministic: ties broken by input order.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "reasoner/detail/question_analysis.hpp"
#include "reasoner/detail/question_intent.hpp"
#include "reasoner/detail/relation_cues.hpp"
#include "reasoner/reasoner.hpp"
#include "text/similarity.hpp"
#include "text/stopwords.hpp"
#include "text/tokenize.hpp"

namespace glassbox::reasoner {

// The question's analysis (reasoner/detail/) under the names the writers use.
using detail::answer_type_mismatch;
using detail::mention_match;
using detail::predicate_match;
using detail::PredicateMatch;
using detail::question_intent;
using detail::question_relations;
using detail::QuestionIntent;
using detail::relation_cues;

namespace {

using detail::analyze_question;
using detail::QuestionAnalysis;
using text::lower;
using text::normalize;

struct Mention {
    std::string normalized;
    double weight = 1.0;
    text::Trigrams trigrams;  // of `normalized` (with_trigrams): compared with every node label
};

std::vector<Mention> with_trigrams(std::vector<Mention> mentions) {
    for (auto& m : mentions) m.trigrams = text::trigrams(m.normalized);
    return mentions;
}

// How strongly a node label is one of the question's entity mentions: 1 exact; 0.9 written in
// the question; else a close spelling. Sets `which` to the mention matched, or, for a label
// written in the question but among no mentions, to mentions.size() + own_slot.
// `question_padded`: the question normalised, with a space at either end.
double anchor_strength(const std::string& label_norm, const std::vector<Mention>& mentions,
                       std::string_view question_padded, std::size_t own_slot, std::size_t& which) {
    double best = 0.0;
    which = mentions.size();
    if (label_norm.empty()) return 0.0;
    text::Trigrams label_trigrams;  // made for the first mention it is compared with
    for (std::size_t i = 0; i < mentions.size(); ++i) {
        const auto& m = mentions[i];
        double s = 0.0;
        if (label_norm == m.normalized) {
            s = 1.0;
        } else if (label_norm.size() >= 6 && m.normalized.size() >= 6) {
            if (label_trigrams.packed.empty()) label_trigrams = text::trigrams(label_norm);
            const double sim = text::trigram_similarity(label_trigrams, m.trigrams);
            if (sim >= 0.8) s = 0.85 * sim;
        }
        s *= m.weight;
        if (s > best) {
            best = s;
            which = i;
        }
    }
    if (best < 0.9 && label_norm.size() >= 3 && !text::is_stopword(label_norm)) {
        if (text::contains_phrase(question_padded, label_norm)) {
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
    std::size_t start = 0;  // its nodes before the group's own
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

constexpr std::size_t kNoIndex = std::numeric_limits<std::size_t>::max();
// A path ending at a node of the wrong type for the answer (a year for "who") counts this much.
constexpr double kWrongTypeFactor = 0.6;
constexpr std::size_t kMaxDepth = 3;             // links on a path
constexpr std::size_t kMaxExpansions = 200'000;  // paths extended

// Entity mentions: the question's own, then the caller's concepts (less weight further down).
std::vector<Mention> question_mentions(const QuestionAnalysis& analysis,
                                       const std::vector<std::string>& concepts) {
    std::vector<Mention> mentions;
    std::set<std::string> mention_seen;
    for (const auto& c : analysis.candidates) {
        if (!c.entity) continue;
        auto n = normalize(c.text);
        if (mention_seen.insert(n).second) mentions.push_back({std::move(n), 1.0, {}});
    }
    for (std::size_t i = 0; i < concepts.size(); ++i) {
        auto n = normalize(concepts[i]);
        if (n.empty() || !mention_seen.insert(n).second) continue;
        mentions.push_back(
            {std::move(n), std::max(0.75, 0.95 - 0.03 * static_cast<double>(i)), {}});
    }
    return with_trigrams(std::move(mentions));
}

// Scores the edges of one question (score_with_paths): the graph they make, its named entities,
// the paths from them along the relations asked, each edge's best path, the lexical floor.
class EdgeScorer {
public:
    EdgeScorer(std::string_view question, const std::vector<std::string>& concepts,
               const CancelCheck* cancelled)
        : analysed_(detail::analysed_question(question)),
          analysis_(analysed_->analysis),
          rel_(analysed_->relations),
          rel_total_(rel_.total_weight),
          budget_(cancelled),
          mentions_(question_mentions(analysis_, concepts)),
          question_padded_(" " + normalize(question) + " "),
          intent_(analysed_->intent) {}

    // One score per edge, and each edge's best path when `paths` is given; nullopt when cancelled.
    std::optional<std::vector<double>> score(const std::vector<LabelledEdge>& edges,
                                             const std::vector<double>* embedding_similarity,
                                             std::vector<BestPath>* paths);

private:
    bool read_edges(const std::vector<LabelledEdge>& edges);
    bool find_anchors();
    void bundle_links(std::size_t edge_count);
    void weigh_specificity();
    double take_relation_words(const PredicateMatch& match, std::vector<bool>& taken,
                               bool& took) const;
    double score_path(double start_anchor) const;
    void credit(std::size_t count, double s);
    void push(std::size_t l);
    void pop();
    bool on_path(std::size_t node) const {
        return std::find(path_nodes_.begin(), path_nodes_.end(), node) != path_nodes_.end();
    }
    std::size_t far_end(std::size_t l, std::size_t here) const {
        return links_[l].a == here ? links_[l].b : links_[l].a;
    }
    std::vector<LastHopGroup>& groups_at(std::size_t here);
    void extend(double start_anchor);
    void extend_last_hop(std::size_t here, double start_anchor);
    void search();
    void settle_last_hops();
    std::vector<double> best_path_scores(std::size_t edge_count,
                                         std::vector<BestPath>* paths) const;
    std::vector<double> with_lexical_floor(const std::vector<double>& best,
                                           const std::vector<double>* embedding_similarity) const;

    // The question (its analysis shared with the model's other calls on it).
    std::shared_ptr<const detail::AnalysedQuestion> analysed_;
    const QuestionAnalysis& analysis_;
    const detail::QuestionRelations& rel_;
    double rel_total_;
    SearchBudget budget_;
    std::vector<Mention> mentions_;
    std::string question_padded_;  // normalised, with a space at either end
    const QuestionIntent& intent_;
    // The graph: nodes and predicates, each label once.
    std::vector<std::string> node_norms_;
    std::vector<std::string> node_labels_;  // as first written
    std::unordered_map<std::string, std::size_t> node_index_;
    std::vector<PredicateMatch> predicate_matches_;
    std::unordered_map<std::string, std::size_t> predicate_index_;
    std::vector<GraphEdge> graph_;
    // Per node: how surely it is named in the question, the mention it is, its answer type.
    std::vector<double> anchor_;
    std::vector<std::size_t> anchor_mention_;
    std::set<std::size_t> mentions_present_;
    std::vector<char> wrong_type_;
    // Links (bundle_links), and per node its links (input order), its edges and its weight.
    std::vector<Link> links_;
    std::vector<std::size_t> link_of_;  // per edge
    std::vector<std::vector<std::size_t>> adjacency_;
    std::vector<std::size_t> degree_;
    std::vector<double> specificity_;
    // The search: the path being walked and each link's best path so far.
    std::size_t expansions_ = 0;
    std::vector<std::size_t> path_edges_;  // each link's first edge
    std::vector<std::size_t> path_links_;
    std::vector<std::size_t> path_nodes_;
    std::vector<double> link_best_;
    std::vector<std::uint64_t> link_order_;  // when its best path was found
    std::vector<std::size_t> link_start_;
    std::vector<std::vector<std::size_t>> link_path_;  // only when paths are asked for
    std::uint64_t order_ = 0;
    std::vector<std::vector<LastHopGroup>> last_hops_;
    std::vector<bool> grouped_;
};

// Nodes and predicates, each label once; false when cancelled.
bool EdgeScorer::read_edges(const std::vector<LabelledEdge>& edges) {
    const auto node = [&](const std::string& label) {
        auto n = normalize(label);
        auto [it, inserted] = node_index_.emplace(n, node_norms_.size());
        if (inserted) {
            node_norms_.push_back(std::move(n));
            node_labels_.push_back(label);
        }
        return it->second;
    };
    graph_.reserve(edges.size());
    for (const auto& e : edges) {
        if (graph_.size() % SearchBudget::kCheckEvery == 0 && budget_.poll()) return false;
        GraphEdge g;
        g.from = node(e.s);
        g.to = node(e.o);
        auto [it, inserted] = predicate_index_.emplace(lower(e.p), predicate_matches_.size());
        if (inserted) predicate_matches_.push_back(mention_match(e.p, rel_));
        g.predicate = it->second;
        graph_.push_back(g);
    }
    return true;
}

// Each node's anchor strength and mention, and the nodes of the wrong type for the answer the
// question expects (a year for "who", a name for "when"): a path ending there is not the answer,
// so it counts less. False when cancelled.
bool EdgeScorer::find_anchors() {
    const std::size_t nodes = node_norms_.size();
    anchor_.assign(nodes, 0.0);
    anchor_mention_.assign(nodes, 0);
    for (std::size_t n = 0; n < nodes; ++n) {
        if (n % SearchBudget::kCheckEvery == 0 && budget_.poll()) return false;
        anchor_[n] =
            anchor_strength(node_norms_[n], mentions_, question_padded_, n, anchor_mention_[n]);
        if (anchor_[n] >= 0.8) mentions_present_.insert(anchor_mention_[n]);
    }
    wrong_type_.assign(nodes, 0);
    for (std::size_t n = 0; n < nodes; ++n)
        wrong_type_[n] = answer_type_mismatch(intent_, node_labels_[n]) ? 1 : 0;
    return true;
}

// Edges joining the same two nodes through predicates the question reads alike (the same match
// against every relation word) score alike on every path: the search walks each such bundle, a
// link, once. Loops lie on no path.
void EdgeScorer::bundle_links(std::size_t edge_count) {
    std::map<std::vector<std::vector<double>>, std::size_t> class_index;
    std::vector<std::size_t> predicate_class(predicate_matches_.size());
    for (std::size_t p = 0; p < predicate_matches_.size(); ++p)
        predicate_class[p] =
            class_index.emplace(predicate_matches_[p].by_word, class_index.size()).first->second;
    link_of_.assign(edge_count, kNoIndex);
    std::map<std::tuple<std::size_t, std::size_t, std::size_t>, std::size_t> link_index;
    adjacency_.assign(node_norms_.size(), {});
    degree_.assign(node_norms_.size(), 0);
    for (std::size_t i = 0; i < graph_.size(); ++i) {
        const auto& g = graph_[i];
        ++degree_[g.from];
        if (g.to == g.from) continue;
        ++degree_[g.to];
        const std::size_t cls = predicate_class[g.predicate];
        auto [it, inserted] = link_index.emplace(
            std::tuple{std::min(g.from, g.to), std::max(g.from, g.to), cls}, links_.size());
        if (inserted) {
            links_.push_back(Link{g.from, g.to, cls, {}});
            adjacency_[g.from].push_back(it->second);
            adjacency_[g.to].push_back(it->second);
        }
        links_[it->second].edges.push_back(i);
        link_of_[i] = it->second;
    }
}

// A named entity with many edges here (a position, a country) says less about which of them
// matter than one with few: with two named entities, the rarer one's edges lead.
void EdgeScorer::weigh_specificity() {
    specificity_.assign(node_norms_.size(), 1.0);
    if (mentions_present_.size() <= 1) return;
    for (std::size_t n = 0; n < node_norms_.size(); ++n) {
        const double degree_here = static_cast<double>(degree_[n]);
        specificity_[n] = 1.0 / (1.0 + 0.05 * std::log1p(degree_here));
    }
}

// What one edge of a path expresses of the question's relation words not yet `taken`: each word
// of the predicate answers one mention, and an edge takes each relation key once (a spouse edge
// answers one "spouse"; "plays position" answers "plays" and "position", not also "club"). Best
// pairs first. `took`: it answered a mention of weight 0.5 or more.
double EdgeScorer::take_relation_words(const PredicateMatch& match, std::vector<bool>& taken,
                                       bool& took) const {
    const auto& mentions_q = rel_.mentions;
    std::vector<std::tuple<double, std::size_t, std::size_t>> pairs;  // value, word, mention
    for (std::size_t w = 0; w < match.by_word.size(); ++w) {
        for (std::size_t j = 0; j < mentions_q.size(); ++j) {
            if (!taken[j] && match.by_word[w][j] > 0.0)
                pairs.emplace_back(mentions_q[j].weight * match.by_word[w][j], w, j);
        }
    }
    std::stable_sort(pairs.begin(), pairs.end(),
                     [](const auto& a, const auto& b) { return std::get<0>(a) > std::get<0>(b); });
    std::set<std::string_view> keys_used;
    std::vector<bool> word_used(match.by_word.size(), false);
    double covered = 0.0;
    took = false;
    for (const auto& [value, w, j] : pairs) {
        if (taken[j] || word_used[w] || keys_used.contains(mentions_q[j].key)) continue;
        taken[j] = true;
        word_used[w] = true;
        keys_used.insert(mentions_q[j].key);
        covered += value;
        took = took || mentions_q[j].weight >= 0.5;
    }
    return covered;
}

// The path being walked: it earns the share of the question's relation words its predicates
// express (each predicate taking each meaning once), loses for edges that neither express a new
// relation word nor reach another named entity, and gains for every named entity it connects.
double EdgeScorer::score_path(double start_anchor) const {
    std::vector<bool> taken(rel_.mentions.size(), false);
    double covered = 0.0;
    std::size_t justified = 0;
    std::set<std::size_t> mentions_on_path;
    mentions_on_path.insert(anchor_mention_[path_nodes_.front()]);
    for (std::size_t k = 0; k < path_edges_.size(); ++k) {
        bool took = false;
        covered +=
            take_relation_words(predicate_matches_[graph_[path_edges_[k]].predicate], taken, took);
        const std::size_t reached = path_nodes_[k + 1];
        bool new_anchor = false;
        if (anchor_[reached] >= 0.8)
            new_anchor = mentions_on_path.insert(anchor_mention_[reached]).second;
        if (took || new_anchor) ++justified;
    }
    const double coverage = rel_total_ > 0.0 ? std::min(1.0, covered / rel_total_) : 1.0;
    const double efficiency =
        static_cast<double>(justified) / static_cast<double>(path_edges_.size());
    const double anchors = mentions_present_.empty()
                               ? 1.0
                               : static_cast<double>(mentions_on_path.size()) /
                                     static_cast<double>(mentions_present_.size());
    const double hops = std::pow(0.92, static_cast<double>(path_edges_.size() - 1));
    const double fit = wrong_type_[path_nodes_.back()] ? kWrongTypeFactor : 1.0;
    return start_anchor * (0.25 + 0.75 * coverage) * (0.4 + 0.6 * efficiency) *
           (0.7 + 0.3 * std::min(1.0, anchors)) * hops * fit;
}

// Credits the path's first `count` links with `s` (each keeps its best, the first found among
// equals).
void EdgeScorer::credit(std::size_t count, double s) {
    for (std::size_t k = 0; k < count; ++k) {
        const std::size_t l = path_links_[k];
        if (s <= link_best_[l]) continue;
        link_best_[l] = s;
        link_order_[l] = order_;
        link_start_[l] = path_nodes_.front();
        if (!link_path_.empty()) link_path_[l] = path_links_;
    }
}

void EdgeScorer::push(std::size_t l) {
    path_nodes_.push_back(far_end(l, path_nodes_.back()));
    path_links_.push_back(l);
    path_edges_.push_back(links_[l].edges.front());
}

void EdgeScorer::pop() {
    path_nodes_.pop_back();
    path_links_.pop_back();
    path_edges_.pop_back();
}

// The last hop: from the end of a two-link path, the links whose predicates read alike and whose
// far ends are the same named-entity mention (or none) add the same score, found once per group;
// each link of the group takes, after the search, the best such path that does not already pass
// its far end (settle_last_hops). Without this a hub (a position every player has) reached by
// many paths costs paths × degree. The groups of a node, made when first asked.
std::vector<LastHopGroup>& EdgeScorer::groups_at(std::size_t here) {
    if (grouped_[here]) return last_hops_[here];
    grouped_[here] = true;
    std::map<std::tuple<std::size_t, std::size_t, char>, std::size_t> index;
    for (auto l : adjacency_[here]) {
        const std::size_t next = far_end(l, here);
        const std::size_t mention = anchor_[next] >= 0.8 ? anchor_mention_[next] : kNoIndex;
        auto [it, inserted] = index.emplace(std::tuple{links_[l].cls, mention, wrong_type_[next]},
                                            last_hops_[here].size());
        if (inserted) last_hops_[here].emplace_back();
        last_hops_[here][it->second].links.push_back(l);
    }
    return last_hops_[here];
}

// The last hop from `here`, once per group: one link of the group off the path scored, the
// path's own links credited, the score kept pending for the group.
void EdgeScorer::extend_last_hop(std::size_t here, double start_anchor) {
    for (auto& group : groups_at(here)) {
        if (budget_.spent()) return;
        // At most two of a group's links lead back onto the path (one per path node).
        std::size_t rep = kNoIndex;
        for (auto l : group.links) {
            if (!on_path(far_end(l, here))) {
                rep = l;
                break;
            }
        }
        if (rep == kNoIndex) continue;
        push(rep);
        const double s = score_path(start_anchor);
        credit(path_links_.size() - 1, s);
        pop();
        if (s > 0.0)
            group.pending.push_back(
                {s, order_, path_links_[0], path_links_[1], path_nodes_[0], path_nodes_[1]});
        ++order_;
    }
}

// Scores the path being walked, then extends it by each link at its end that leaves the path.
void EdgeScorer::extend(double start_anchor) {
    credit(path_links_.size(), score_path(start_anchor));
    ++order_;
    if (path_links_.size() >= kMaxDepth || ++expansions_ > kMaxExpansions) return;
    const std::size_t here = path_nodes_.back();
    if (path_links_.size() + 1 == kMaxDepth) {
        extend_last_hop(here, start_anchor);
        return;
    }
    for (auto l : adjacency_[here]) {
        if (budget_.spent()) return;
        if (on_path(far_end(l, here))) continue;
        push(l);
        extend(start_anchor);
        pop();
    }
}

// Paths from each anchor, up to kMaxDepth links, within the budget.
void EdgeScorer::search() {
    for (std::size_t n = 0; n < node_norms_.size() && !budget_.spent(); ++n) {
        if (anchor_[n] < 0.8) continue;
        for (auto l : adjacency_[n]) {
            if (budget_.spent()) break;
            path_nodes_.assign(1, n);
            path_links_.clear();
            path_edges_.clear();
            push(l);
            extend(anchor_[n] * specificity_[n]);
        }
    }
}

// Each last-hop link takes the best pending path that does not pass its far end. Pending paths
// run best first (the first found among equals); a path holds two nodes besides the group's own,
// so each path is passed over for at most two links.
void EdgeScorer::settle_last_hops() {
    for (std::size_t here = 0; here < node_norms_.size(); ++here) {
        for (auto& group : last_hops_[here]) {
            if (group.pending.empty()) continue;
            std::stable_sort(group.pending.begin(), group.pending.end(),
                             [](const auto& a, const auto& b) { return a.score > b.score; });
            for (auto l : group.links) {
                const std::size_t next = far_end(l, here);
                for (const auto& p : group.pending) {
                    if (p.start == next || p.middle == next) continue;
                    if (p.score > link_best_[l] ||
                        (p.score == link_best_[l] && p.order < link_order_[l])) {
                        link_best_[l] = p.score;
                        link_order_[l] = p.order;
                        link_start_[l] = p.start;
                        if (!link_path_.empty()) link_path_[l] = {p.first_link, p.second_link, l};
                    }
                    break;
                }
            }
        }
    }
}

// Each edge's best path score (its link's), and the path itself when `paths` is given.
std::vector<double> EdgeScorer::best_path_scores(std::size_t edge_count,
                                                 std::vector<BestPath>* paths) const {
    std::vector<double> best(edge_count, 0.0);
    if (paths != nullptr) paths->assign(edge_count, BestPath{});
    for (std::size_t i = 0; i < edge_count; ++i) {
        const std::size_t l = link_of_[i];
        if (l == kNoIndex || link_best_[l] <= 0.0) continue;
        best[i] = link_best_[l];
        if (paths == nullptr) continue;
        auto& out = (*paths)[i];
        out.start = node_labels_[link_start_[l]];
        for (auto on : link_path_[l]) out.edges.push_back(on == l ? i : links_[on].edges.front());
    }
    return best;
}

// A floor from the edge's own words against the question, scaled down: all an edge that no
// anchored path reaches gets. The embedding cosine blended in; rounded to 4 decimals.
std::vector<double> EdgeScorer::with_lexical_floor(
    const std::vector<double>& best, const std::vector<double>* embedding_similarity) const {
    std::vector<double> scores(best.size(), 0.0);
    for (std::size_t i = 0; i < best.size(); ++i) {
        const auto& match = predicate_matches_[graph_[i].predicate];
        double covered = 0.0;
        for (std::size_t j = 0; j < rel_.mentions.size(); ++j)
            covered += rel_.mentions[j].weight * match.best[j];
        const double predicate_share = rel_total_ > 0.0 ? std::min(1.0, covered / rel_total_) : 0.0;
        const double entity = std::max(anchor_[graph_[i].from], anchor_[graph_[i].to]);
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

std::optional<std::vector<double>> EdgeScorer::score(
    const std::vector<LabelledEdge>& edges, const std::vector<double>* embedding_similarity,
    std::vector<BestPath>* paths) {
    if (!read_edges(edges) || !find_anchors()) return std::nullopt;
    bundle_links(edges.size());
    weigh_specificity();
    link_best_.assign(links_.size(), 0.0);
    link_order_.assign(links_.size(), 0);
    link_start_.assign(links_.size(), 0);
    link_path_.assign(paths != nullptr ? links_.size() : 0, {});
    last_hops_.assign(node_norms_.size(), {});
    grouped_.assign(node_norms_.size(), false);
    search();
    if (budget_.cancelled()) return std::nullopt;
    settle_last_hops();
    return with_lexical_floor(best_path_scores(edges.size(), paths), embedding_similarity);
}

// score_edges, also reporting each edge's best path when `paths` is given; nullopt when
// cancelled.
std::optional<std::vector<double>> score_with_paths(std::string_view question,
                                                    const std::vector<std::string>& concepts,
                                                    const std::vector<LabelledEdge>& edges,
                                                    const std::vector<double>* embedding_similarity,
                                                    std::vector<BestPath>* paths,
                                                    const CancelCheck* cancelled) {
    return EdgeScorer(question, concepts, cancelled).score(edges, embedding_similarity, paths);
}

}  // namespace

std::optional<std::vector<double>> ExtractiveModel::score_edges(
    std::string_view question, const std::vector<std::string>& concepts,
    const std::vector<LabelledEdge>& edges, const std::vector<double>* embedding_similarity,
    const CancelCheck& cancelled) const {
    return score_with_paths(question, concepts, edges, embedding_similarity, nullptr, &cancelled);
}

namespace {

// The reason's words for one edge end: whether the label is named in the question. Asked once
// per distinct label of a call (an edge set repeats its nodes: a hub is on most edges).
class NamedLabels {
public:
    NamedLabels(std::vector<Mention> mentions, std::string question_padded)
        : mentions_(std::move(mentions)), question_padded_(std::move(question_padded)) {}

    bool named(const std::string& label) {
        const auto [it, inserted] = named_.try_emplace(label, false);
        if (inserted) {
            std::size_t which = 0;
            it->second =
                anchor_strength(normalize(label), mentions_, question_padded_, 0, which) >= 0.8;
        }
        return it->second;
    }

private:
    std::vector<Mention> mentions_;
    std::string question_padded_;
    std::unordered_map<std::string, bool> named_;
};

// "its relation "p" matches "w1", "w2" in the question", or "" when it matches no relation word.
std::string relation_part(const std::string& predicate, const detail::QuestionRelations& rel) {
    const auto rows = predicate_match(predicate, rel.words);
    std::vector<std::string> words;
    for (std::size_t j = 0; j < rel.words.size(); ++j) {
        bool matched = false;
        for (const auto& row : rows) matched = matched || row[j] > 0.0;
        if (matched && std::find(words.begin(), words.end(), rel.words[j].surface) == words.end())
            words.push_back(rel.words[j].surface);
    }
    if (words.empty()) return {};
    std::string list;
    for (std::size_t k = 0; k < words.size(); ++k) {
        if (k) list += ", ";
        list += "\"" + words[k] + "\"";
    }
    return "its relation \"" + predicate + "\" matches " + list + " in the question";
}

// One edge's reason from its parts (none: it matches nothing of the question directly).
std::string reason_text(const LabelledEdge& e, const std::vector<std::string>& parts) {
    if (parts.empty()) {
        return "\"" + e.s + " " + e.p + " " + e.o +
               "\" matches no entity or relation word of the question directly; it may "
               "link entities that do.";
    }
    std::string reason = "\"" + e.s + " " + e.p + " " + e.o + "\": ";
    for (std::size_t k = 0; k < parts.size(); ++k) {
        if (k) reason += k + 1 == parts.size() ? " and " : ", ";
        reason += parts[k];
    }
    reason += ".";
    return reason;
}

}  // namespace

std::optional<std::vector<std::string>> ExtractiveModel::reason_edges(
    std::string_view question, const std::vector<LabelledEdge>& edges,
    const CancelCheck& cancelled) const {
    std::vector<BestPath> paths;
    if (!score_with_paths(question, extract_concepts(question), edges, nullptr, &paths, &cancelled))
        return std::nullopt;
    const auto analysed = detail::analysed_question(question);
    const auto& analysis = analysed->analysis;
    const auto& rel = analysed->relations;
    std::vector<Mention> mentions;
    for (const auto& c : analysis.candidates)
        if (c.entity) mentions.push_back({normalize(c.text), 1.0, {}});
    NamedLabels labels(with_trigrams(std::move(mentions)), " " + normalize(question) + " ");
    // Each distinct predicate's words against the question's, worked out once.
    std::unordered_map<std::string, std::string> relation_parts;

    std::vector<std::string> out;
    out.reserve(edges.size());
    for (std::size_t i = 0; i < edges.size(); ++i) {
        if (i % 1'024 == 0 && cancelled && cancelled()) return std::nullopt;
        const auto& e = edges[i];
        std::vector<std::string> parts;
        const bool subject_named = labels.named(e.s);
        const bool object_named = labels.named(e.o);
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
        auto [part, inserted] = relation_parts.try_emplace(e.p);
        if (inserted) part->second = relation_part(e.p, rel);
        if (!part->second.empty()) parts.push_back(part->second);
        out.push_back(reason_text(e, parts));
    }
    return out;
}

}  // namespace glassbox::reasoner
