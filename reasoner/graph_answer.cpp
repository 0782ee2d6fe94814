// The extractive model's answer from knowledge-graph edges: the path from a named entity along
// the relations asked for, its end node as the short answer, one sentence stating both.
// Deterministic: ties broken by input order.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "reasoner/detail/name_list.hpp"
#include "reasoner/detail/question_analysis.hpp"
#include "reasoner/detail/question_intent.hpp"
#include "reasoner/detail/relation_cues.hpp"
#include "reasoner/reasoner.hpp"
#include "text/stopwords.hpp"
#include "text/tokenize.hpp"

namespace glassbox::reasoner {

// The question's analysis (reasoner/detail/) under the names the writers use.
using detail::answer_type_mismatch;
using detail::AnswerType;
using detail::looks_like_number;
using detail::looks_like_time;
using detail::mention_match;
using detail::PredicateMatch;
using detail::question_intent;
using detail::question_relations;
using detail::QuestionIntent;
using detail::QuestionRelations;
using detail::relation_cues;

namespace {

using detail::valid_marker_id;
using text::lower;
using text::normalize;

constexpr std::size_t kMaxFacts = 2'000;        // facts looked at (graph-rag sends 25 or so)
constexpr std::size_t kMaxPathSteps = 200'000;  // path-search steps
constexpr std::size_t kMaxHops = 3;
constexpr std::size_t kMaxListed = 5;       // answers named before "and N others"
constexpr std::size_t kMaxListedList = 20;  // the same for a question asking for a list
// The least score of a path that answers: below it no fact expresses what was asked (a path
// expressing nothing of the chain scores at most 0.2 × 0.5 × 1.5).
constexpr double kDecides = 0.2;

// One fact: an edge with its " inverse" predicate read the other way round, so an edge and its
// inverse are the same fact. `id` is the first marker it was given.
struct Fact {
    std::string id;
    std::size_t s = 0;  // node indexes
    std::size_t o = 0;
    std::string p;  // as written, underscores as spaces, " inverse" removed
};

// A path from a named entity: facts, each taken forward (its subject on the entity's side) or
// backward, and its nodes (one more than its facts).
struct Path {
    std::vector<std::size_t> facts;
    std::vector<bool> forward;
    std::vector<std::size_t> nodes;
    double score = 0.0;
};

std::vector<std::string> split_words(std::string_view predicate) {
    std::vector<std::string> out;
    std::string current;
    for (char c : predicate) {
        if (c == ' ') {
            if (!current.empty()) out.push_back(std::move(current));
            current.clear();
        } else {
            current.push_back(c);
        }
    }
    if (!current.empty()) out.push_back(std::move(current));
    return out;
}

std::string join_words(const std::vector<std::string>& w, std::size_t from, std::size_t to) {
    std::string out;
    for (std::size_t i = from; i < to && i < w.size(); ++i) out += (out.empty() ? "" : " ") + w[i];
    return out;
}

bool is_preposition(std::string_view w) {
    static const std::unordered_set<std::string_view> words{
        "of", "in", "by",    "for",     "at",    "to",   "with",  "from",
        "on", "as", "under", "between", "after", "into", "about", "near"};
    return words.contains(w);
}

bool is_auxiliary(std::string_view w) {
    return w == "is" || w == "was" || w == "are" || w == "were";
}

// A predicate that reads as a verb phrase ("is in country", "plays position", "born in").
bool verbal_predicate(const std::vector<std::string>& w) {
    static const std::unordered_set<std::string_view> verbs{
        "is",       "are",      "was",        "were",     "has",   "have",    "had",     "plays",
        "played",   "wears",    "wore",       "lives",    "lived", "born",    "died",    "located",
        "works",    "worked",   "founded",    "directed", "wrote", "written", "owns",    "owned",
        "contains", "includes", "belongs",    "speaks",   "won",   "married", "studied", "created",
        "produced", "released", "published",  "based",    "made",  "leads",   "led",     "holds",
        "held",     "uses",     "used",       "knows",    "likes", "hosts",   "hosted",  "lies",
        "sails",    "houses",   "discovered", "damaged",  "built", "designed"};
    if (w.empty()) return true;
    const std::string first = lower(w.front());
    const std::string last = lower(w.back());
    return verbs.contains(first) || is_preposition(last) ||
           (first.size() > 3 && first.ends_with("ed"));
}

// The simple past of a participle ("built" → "built", "written" → "wrote").
std::string past_of(const std::string& participle) {
    static const std::unordered_map<std::string_view, std::string_view> irregular{
        {"written", "wrote"}, {"driven", "drove"},     {"given", "gave"},   {"taken", "took"},
        {"known", "knew"},    {"drawn", "drew"},       {"sung", "sang"},    {"begun", "began"},
        {"seen", "saw"},      {"chosen", "chose"},     {"spoken", "spoke"}, {"stolen", "stole"},
        {"eaten", "ate"},     {"ridden", "rode"},      {"broken", "broke"}, {"flown", "flew"},
        {"grown", "grew"},    {"thrown", "threw"},     {"done", "did"},     {"shown", "showed"},
        {"borne", "bore"},    {"forgotten", "forgot"}, {"frozen", "froze"}};
    if (auto it = irregular.find(participle); it != irregular.end()) return std::string(it->second);
    return participle;
}

// The verb phrase in the plural: "plays position" → "play position", "is in" → "are in".
std::string plural_verb(const std::string& phrase) {
    auto w = split_words(phrase);
    if (w.empty()) return phrase;
    std::string& v = w.front();
    if (v == "is") {
        v = "are";
    } else if (v == "was") {
        v = "were";
    } else if (v == "has") {
        v = "have";
    } else if (v.size() > 3 && v.ends_with("ies")) {
        v = v.substr(0, v.size() - 3) + "y";
    } else if (v.size() > 3 &&
               (v.ends_with("shes") || v.ends_with("ches") || v.ends_with("sses"))) {
        v.resize(v.size() - 2);
    } else if (v.size() > 2 && v.back() == 's' && v[v.size() - 2] != 's' && v != "has") {
        v.pop_back();
    }
    return join_words(w, 0, w.size());
}

// "children" → "child", "parents" → "parent"; true when the word was a plural.
std::pair<std::string, bool> singular(const std::string& noun) {
    if (noun == "children") return {"child", true};
    if (noun == "people") return {"person", true};
    if (noun.size() > 3 && noun.back() == 's' && !noun.ends_with("ss") && !noun.ends_with("us") &&
        !noun.ends_with("is"))
        return {noun.substr(0, noun.size() - 1), true};
    return {noun, false};
}

// How a fact reads with one of its nodes as the subject: the verb phrase and what follows it
// ("founded" + "Brenn and Daughters Shipyard"), or a noun phrase for an appositive ("a child
// of X"). Absent when no plain English reading is known.
struct Reading {
    std::string verb;  // "was built by", "is the country"; empty for a noun phrase
    std::string rest;  // the object, or the noun phrase
    bool noun_phrase = false;
    std::string noun;     // set for a noun relation read from its subject ("spouse", "child")
    std::string article;  // before `noun`: "a" for a relation named in the plural, else "the"
    bool relative_only = false;  // reads well only after its subject ("…, where X was born")
};

// The reading as a clause after its subject: a main clause ("founded X", "is the gender of
// X", "has X as a child"), or a relative one after a noun (", which built X", ", a child of
// X", ", whose spouse is X"). `plural`: the main clause's subject is a list; `person`: the
// relative clause's subject is a person ("who", not "which").
std::string clause(const Reading& r, bool plural, bool relative, bool person = false) {
    if (r.noun_phrase) return relative ? ", " + r.rest : (plural ? "are " : "is ") + r.rest;
    if (!r.noun.empty()) {
        return relative ? ", whose " + r.noun + " is " + r.rest
                        : (plural ? "have " : "has ") + r.rest + " as " + r.article + " " + r.noun;
    }
    if (relative) return (person ? ", who " : ", which ") + r.verb + " " + r.rest;
    return (plural ? plural_verb(r.verb) : r.verb) + " " + r.rest;
}

// `object` is the other node's label as written in the sentence. `subject_is_s`: read from the
// fact's subject (the natural direction) or from its object.
std::optional<Reading> read_fact(const std::string& predicate, const std::string& object,
                                 bool subject_is_s, bool object_is_literal) {
    const auto w = split_words(predicate);
    if (w.empty()) return std::nullopt;
    std::vector<std::string> lw;
    lw.reserve(w.size());
    for (const auto& x : w) lw.push_back(lower(x));
    const bool verbal = verbal_predicate(w);
    // "was built in year" + 1898: the year as a year.
    std::size_t end = w.size();
    if (object_is_literal && end >= 2 && (lw[end - 1] == "year" || lw[end - 1] == "date") &&
        is_preposition(lw[end - 2]))
        --end;
    if (subject_is_s) {
        if (verbal) {
            // "has height in metres" + 34.5 → "has a height of 34.5 metres"; "has population"
            // + 5600 → "has a population of 5600".
            if (lw[0] == "has" && end >= 4 && lw[end - 2] == "in" && object_is_literal)
                return Reading{"has a " + join_words(w, 1, end - 2) + " of",
                               object + " " + w[end - 1],
                               false,
                               {},
                               {}};
            if (lw[0] == "has" && end >= 2 && object_is_literal)
                return Reading{"has a " + join_words(w, 1, end) + " of", object, false, {}, {}};
            return Reading{join_words(w, 0, end), object, false, {}, {}};
        }
        // A noun: "gender" → "whose gender is male"; as a main clause "has male as the
        // gender"; "children" → "has X as a child".
        if (end == 1) {
            const auto [one, plural] = singular(lw[0]);
            return Reading{"has", object, false, one, plural ? "a" : "the"};
        }
        return Reading{"has", object, false, join_words(w, 0, end), "the"};
    }
    // Read from the object: "X was built by Y" → "Y built X".
    if (w.size() >= 3 && is_auxiliary(lw[0]) && lw.back() == "by" && w.size() == 3)
        return Reading{past_of(lw[1]), object, false, {}, {}};
    if (!verbal) {
        // "X children Y" → "Y is a child of X"; "X gender male" → "male is the gender of X".
        if (w.size() == 1) {
            const auto [one, plural] = singular(lw[0]);
            return Reading{"", (plural ? "a " : "the ") + one + " of " + object, true, {}, {}};
        }
        return Reading{"", "the " + join_words(w, 0, w.size()) + " of " + object, true, {}, {}};
    }
    // "X has population Y" → "Y is the population of X".
    if (lw[0] == "has" && w.size() >= 2)
        return Reading{"", "the " + join_words(w, 1, w.size()) + " of " + object, true, {}, {}};
    // "X is in country Y" → "Y is the country X is in"; "X plays position Y" → "Y is the
    // position X plays". Not for a participle last ("is aged").
    const bool participle = lw.back().ends_with("ed") || lw.back().ends_with("en");
    if (w.size() >= 2 && !is_preposition(lw.back()) && !participle && !object_is_literal) {
        const std::string& noun = w.back();
        return Reading{
            "", "the " + noun + " " + object + " " + join_words(w, 0, w.size() - 1), true, {}, {}};
    }
    // "X was born in Y" → "Y, where X was born"; "X studied under Y" → "Y, the one X studied
    // under".
    if (is_preposition(lw.back()) && w.size() >= 2) {
        Reading r;
        r.noun_phrase = true;
        r.relative_only = true;
        r.rest = (lw.back() == "in" || lw.back() == "on" || lw.back() == "at")
                     ? "where " + object + " " + join_words(w, 0, w.size() - 1)
                     : "the one " + object + " " + join_words(w, 0, w.size());
        return r;
    }
    return std::nullopt;
}

// The sentence's words for a node: "the MV Curlew" when the question writes "the MV Curlew".
std::string node_text(const std::string& label, const std::string& question_lower) {
    const std::string l = lower(label);
    if (!l.starts_with("the ") && question_lower.find("the " + l) != std::string::npos)
        return "the " + label;
    return label;
}

std::string capitalised(std::string s) {
    if (!s.empty() && s.front() >= 'a' && s.front() <= 'z')
        s.front() = static_cast<char>(s.front() - 'a' + 'A');
    return s;
}

// How well a node fits the answer type the question expects: 1 fits, 0.85 cannot tell, 0.5
// does not fit (a year for "who", a name for "when"). `predicate` is the last fact's.
// A predicate naming what its object is ("built by", "is in country") says so of the object
// only: reached backwards, the end is its subject (the ship built, the player with a country),
// which is not the thing asked for.
double type_fit(const QuestionIntent& intent, const std::string& label,
                const std::string& predicate, bool end_is_object) {
    if (answer_type_mismatch(intent, label)) return 0.5;
    const std::string p = lower(predicate);
    switch (intent.type) {
        case AnswerType::kAgent:
            if (!p.ends_with(" by")) return 0.85;
            return end_is_object ? 1.0 : 0.6;
        case AnswerType::kTime:
        case AnswerType::kNumber:
            return 1.0;
        case AnswerType::kClass: {
            if (intent.class_word.empty()) return 0.85;
            const std::string c = text::stem(intent.class_word);
            for (const auto& w : text::words(p))
                if (text::stem(w) == c) return end_is_object ? 1.0 : 0.6;
            return 0.85;
        }
        case AnswerType::kPlace:
        case AnswerType::kAny:
        case AnswerType::kYesNo:
            return 0.85;
    }
    return 0.85;
}

// A fact that gives its subject's class ("Little Tarn type island").
bool type_predicate(const std::string& predicate) {
    const std::string p = lower(predicate);
    return p == "type" || p == "is a" || p == "instance of" || p == "has type" || p == "rdf type" ||
           p == "class";
}

// ---- the facts --------------------------------------------------------------------------------

// The facts of the edges, each once, and the nodes they join: a node per normalised label, named
// by the label as first written.
struct FactGraph {
    std::vector<std::string> labels;
    std::vector<std::string> node_norms;
    std::unordered_map<std::string, std::size_t> node_index;
    std::vector<Fact> facts;
    std::vector<std::vector<std::size_t>> adjacency;  // per node, the facts at it

    std::size_t node(const std::string& label) {
        auto n = normalize(label);
        auto [it, inserted] = node_index.emplace(n, labels.size());
        if (inserted) {
            labels.push_back(label);
            node_norms.push_back(std::move(n));
        }
        return it->second;
    }

    // The node at the other end of fact `f` from node `n`.
    std::size_t other_end(std::size_t f, std::size_t n) const {
        return facts[f].s == n ? facts[f].o : facts[f].s;
    }
};

// An edge's predicate as a fact reads it: underscores as spaces, a " inverse" suffix removed
// (true: the edge is to be read the other way round).
std::pair<std::string, bool> fact_predicate(const std::string& edge_predicate) {
    std::string predicate = edge_predicate;
    bool inverse = false;
    const std::string lp = lower(predicate);
    for (std::string_view suffix : {std::string_view(" inverse"), std::string_view("_inverse")}) {
        if (lp.size() > suffix.size() && lp.ends_with(suffix)) {
            predicate.resize(predicate.size() - suffix.size());
            inverse = true;
        }
    }
    std::replace(predicate.begin(), predicate.end(), '_', ' ');
    return {std::move(predicate), inverse};
}

// Facts, each once: an edge and its inverse are one fact; an edge with an id no marker can cite,
// or an id seen before, is left out; at most kMaxFacts.
FactGraph fact_graph(const std::vector<LabelledEdge>& edges) {
    FactGraph g;
    std::set<std::tuple<std::size_t, std::string, std::size_t>> fact_keys;
    std::set<std::string> ids;
    for (const auto& e : edges) {
        if (g.facts.size() >= kMaxFacts) break;
        if (!valid_marker_id(e.id) || !ids.insert(e.id).second) continue;
        auto [predicate, inverse] = fact_predicate(e.p);
        std::size_t s = g.node(e.s);
        std::size_t o = g.node(e.o);
        if (inverse) std::swap(s, o);
        if (!fact_keys.emplace(s, lower(predicate), o).second) continue;
        g.facts.push_back({e.id, s, o, std::move(predicate)});
    }
    g.adjacency.resize(g.labels.size());
    for (std::size_t f = 0; f < g.facts.size(); ++f) {
        g.adjacency[g.facts[f].s].push_back(f);
        if (g.facts[f].o != g.facts[f].s) g.adjacency[g.facts[f].o].push_back(f);
    }
    return g;
}

// ---- the question against the facts ----------------------------------------------------------

// The class word of "which X" / "name an X" names the answer's type. As a relation it is no hop
// of its own when another mention asks the same ("what faith does X's mother practice") or when
// it is all the chain ("name a soccer club in Mexico"): then it leaves the chain.
void drop_class_hop(QuestionRelations& rel, const QuestionIntent& intent,
                    std::string_view question) {
    if (intent.class_word.empty()) return;
    const std::string class_stem = text::stem(intent.class_word);
    for (auto it = rel.chain.begin(); it != rel.chain.end(); ++it) {
        const auto& m = rel.mentions[*it];
        const bool names_class = std::any_of(m.words.begin(), m.words.end(), [&](auto w) {
            return rel.words[w].stem == class_stem;
        });
        if (!names_class) continue;
        // The class phrase: the class word and the word before it ("soccer club"). "name
        // a player who plays …": the mention also holds a relation word ("plays").
        std::set<std::string> phrase;
        const auto qwords = text::words(question);
        for (std::size_t i = 0; i < qwords.size(); ++i) {
            if (qwords[i] != intent.class_word) continue;
            phrase.insert(qwords[i]);
            if (i > 0) phrase.insert(qwords[i - 1]);
            break;
        }
        const bool only_class = std::all_of(m.words.begin(), m.words.end(), [&](auto w) {
            return phrase.contains(rel.words[w].surface);
        });
        const bool asked_again = std::any_of(rel.chain.begin(), rel.chain.end(), [&](auto o) {
            return o != *it && rel.mentions[o].key == m.key;
        });
        if (asked_again || (only_class && rel.chain.size() == 1)) rel.chain.erase(it);
        break;
    }
}

// How surely each node is a named entity of the question: 1 a mention's text, 0.9 its label
// written in the question (`question_norm`: normalised, padded with spaces) outside the names of
// the nodes a mention names, else 0. A word of a name is not named by it: "russia" in
// "alexandra_pavlovna_of_russia", "j_p_morgan" in "j_p_morgan_jr".
std::vector<double> named_anchors(const FactGraph& g, const detail::QuestionAnalysis& analysis,
                                  std::string question_norm) {
    std::set<std::string> mentions;
    for (const auto& c : analysis.candidates)
        if (c.entity) mentions.insert(normalize(c.text));
    std::vector<double> anchor(g.labels.size(), 0.0);
    for (std::size_t n = 0; n < g.labels.size(); ++n) {
        if (!mentions.contains(g.node_norms[n])) continue;
        anchor[n] = 1.0;
        // The name leaves the text the other nodes are looked for in ("|" is no word).
        const std::string name = " " + g.node_norms[n] + " ";
        for (auto at = question_norm.find(name); at != std::string::npos;
             at = question_norm.find(name, at + 1))
            question_norm.replace(at, name.size(), " | ");
    }
    for (std::size_t n = 0; n < g.labels.size(); ++n) {
        const auto& norm = g.node_norms[n];
        if (anchor[n] == 0.0 && norm.size() >= 3 && !text::is_stopword(norm) &&
            text::contains_phrase(question_norm, norm))
            anchor[n] = 0.9;
    }
    return anchor;
}

// "was born in", "is located on", "is in country": its object is a place, what "where" (or
// "based in") asks for ("plays in club" names no place).
bool locative_predicate(const std::string& predicate) {
    const auto w = split_words(lower(predicate));
    bool locative = false;
    for (std::size_t i = 1; i < w.size(); ++i) {
        if (w[i] != "in" && w[i] != "on" && w[i] != "at") continue;
        const auto& cues =
            i + 1 < w.size() ? relation_cues(w[i + 1]) : std::vector<std::string_view>{};
        locative = locative || i + 1 == w.size() ||
                   std::find(cues.begin(), cues.end(), "location") != cues.end();
    }
    return locative;
}

// A fact that says its subject is a person: it was born, died or married, has a gender, or is
// typed a person ("Ilse Varrow was born in Tarnwick").
bool says_person(const Fact& f, const std::vector<std::string>& labels) {
    const std::string p = lower(f.p);
    const auto pw = split_words(p);
    const bool lived = std::any_of(pw.begin(), pw.end(), [](const std::string& w) {
        return w == "born" || w == "died" || w == "married" || w == "spouse" || w == "birthplace" ||
               w == "birthdate";
    });
    if (p == "gender" || p == "sex" || p == "has gender" || lived) return true;
    if (!type_predicate(f.p)) return false;
    const std::string c = lower(labels[f.o]);
    return c == "person" || c == "human" || c == "people";
}

// A chain mention a fact can express: (value, predicate word, chain index).
using Expression = std::tuple<double, std::size_t, std::size_t>;

// What one fact of a path takes of the asked chain (score_path).
struct FactTake {
    bool took = false;       // it answered at least one mention not answered before
    std::size_t lowest = 0;  // the chain indexes it answered
    std::size_t highest = 0;
    double value = 0.0;
};

// The answer from the facts of one question: the best walks from its named entities along the
// relations it asks for, and the sentences that state them. One per answer_from_edges call.
class EdgeAnswerWriter {
public:
    EdgeAnswerWriter(std::string_view question, FactGraph graph)
        : g_(std::move(graph)),
          analysed_(detail::analysed_question(question)),
          analysis_(analysed_->analysis),
          intent_(analysed_->intent),
          rel_(analysed_->relations),  // a copy: drop_class_hop changes it
          question_lower_(lower(question)) {
        drop_class_hop(rel_, intent_, question);
        anchor_ = named_anchors(g_, analysis_, " " + normalize(question) + " ");
        for (auto m : rel_.chain) chain_weight_ += rel_.mentions[m].weight;
        expressed_ = chain_expressions();
        nominal_.assign(g_.facts.size(), 0);
        for (std::size_t f = 0; f < g_.facts.size(); ++f)
            nominal_[f] = verbal_predicate(split_words(g_.facts[f].p)) ? 0 : 1;
        person_.assign(g_.labels.size(), 0);
        for (const auto& f : g_.facts)
            if (says_person(f, g_.labels)) person_[f.s] = 1;
        joins_at_ = joins_to_named_entities();
        end_fit_ = end_fits();
        class_mention_ = class_mention();
    }

    ComposedAnswer write();

private:
    std::vector<std::vector<Expression>> chain_expressions() const;
    std::vector<std::vector<std::size_t>> joins_to_named_entities() const;
    std::vector<std::array<double, 2>> end_fits();
    std::size_t class_mention() const;
    std::vector<bool> nodes_named_as_class(const std::string& class_word) const;
    std::vector<std::size_t> joining(const Path& path) const;
    std::size_t joining_count(const Path& path) const;
    FactTake take_mentions(std::size_t f);
    double score_path(const Path& path);
    bool literal(std::size_t n) const {
        return looks_like_time(g_.labels[n]) || looks_like_number(g_.labels[n]);
    }
    std::optional<std::string> state_fact(const Fact& f) const;
    std::vector<std::size_t> named_in_order() const;
    std::optional<ComposedAnswer> yes_no_answer() const;
    std::vector<Path> walk_paths();
    void extend(Path& current, std::vector<Path>& found, double& best_score, std::size_t& steps,
                std::size_t max_hops);
    std::vector<const Path*> sibling_answers(const std::vector<Path>& found, const Path& top) const;
    Path from_last_named_entity(Path path) const;
    std::vector<std::size_t> merged_joins(const Path& path, std::size_t listed) const;
    std::optional<std::string> answer_first_sentence(const Path& path, const std::string& subject,
                                                     bool plural,
                                                     const std::vector<std::size_t>& merged) const;
    std::string entity_first_sentence(const Path& path, const std::string& subject) const;
    void add_join_sentences(const Path& path, bool merged_stated,
                            const std::vector<std::size_t>& merged,
                            std::vector<std::string>& sentences,
                            std::vector<std::string>& answer_ids) const;
    ComposedAnswer state_answers(const std::vector<const Path*>& answers) const;

    FactGraph g_;
    // The question's analysis, shared with the model's other calls on it.
    std::shared_ptr<const detail::AnalysedQuestion> analysed_;
    const detail::QuestionAnalysis& analysis_;
    const QuestionIntent& intent_;
    QuestionRelations rel_;
    std::string question_lower_;
    std::vector<double> anchor_;  // per node: named in the question (named_anchors)
    double chain_weight_ = 0.0;
    // Per fact, the chain mentions it can express, best first. On a path each predicate word
    // answers one mention not yet answered ("was built in year" answers "built" and "when"; a
    // second spouse fact the second "spouse").
    std::vector<std::vector<Expression>> expressed_;
    std::vector<char> nominal_;  // per fact: a noun relation ("children"), not a verb
    std::vector<char> person_;   // per node
    std::vector<std::vector<std::size_t>> joins_at_;  // per node: facts to named entities
    std::vector<std::array<double, 2>> end_fit_;      // per fact: forward, backward
    // Per fact, forward and backward: its far end is of the class asked (end_fits).
    std::vector<std::array<bool, 2>> end_of_class_;
    std::size_t class_mention_ = 0;  // the chain index naming the class; chain size: none
    // Scratch of score_path.
    std::vector<char> taken_;
    std::vector<std::size_t> words_used_;
    std::vector<std::size_t> answered_;
};

std::vector<std::vector<Expression>> EdgeAnswerWriter::chain_expressions() const {
    const auto& facts = g_.facts;
    const auto& rel = rel_;
    std::vector<PredicateMatch> matches;
    matches.reserve(facts.size());
    // Facts share few predicates ("plays in club" for every player): each is matched once.
    std::unordered_map<std::string_view, std::size_t> matched;
    for (const auto& f : facts) {
        const auto [first, added] = matched.try_emplace(f.p, matches.size());
        matches.push_back(added ? mention_match(f.p, rel) : matches[first->second]);
    }
    std::vector<std::vector<Expression>> expressed(facts.size());
    for (std::size_t f = 0; f < facts.size(); ++f) {
        auto& pairs = expressed[f];
        for (std::size_t w = 0; w < matches[f].by_word.size(); ++w)
            for (std::size_t c = 0; c < rel.chain.size(); ++c) {
                const std::size_t m = rel.chain[c];
                const double v = rel.mentions[m].weight * matches[f].by_word[w][m];
                if (v > 0.0) pairs.emplace_back(v, w, c);
            }
        if (locative_predicate(facts[f].p)) {
            for (std::size_t c = 0; c < rel.chain.size(); ++c) {
                const auto& m = rel.mentions[rel.chain[c]];
                if (m.key == "location")
                    pairs.emplace_back(0.8 * m.weight, matches[f].by_word.size(), c);
            }
        }
        std::stable_sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) {
            return std::get<0>(a) > std::get<0>(b);
        });
    }
    return expressed;
}

// The facts joining a node to named entities, one per entity (a type fact is not one: "which
// town" names a class, not an entity to join).
std::vector<std::vector<std::size_t>> EdgeAnswerWriter::joins_to_named_entities() const {
    std::vector<std::vector<std::size_t>> joins_at(g_.labels.size());
    for (std::size_t n = 0; n < g_.labels.size(); ++n) {
        std::set<std::size_t> reached;
        for (auto f : g_.adjacency[n]) {
            const std::size_t other = g_.other_end(f, n);
            if (anchor_[other] > 0.0 && !type_predicate(g_.facts[f].p) &&
                reached.insert(other).second)
                joins_at[n].push_back(f);
        }
    }
    return joins_at;
}

// The facts joining a path's end to named entities off the path.
std::vector<std::size_t> EdgeAnswerWriter::joining(const Path& path) const {
    std::vector<std::size_t> out;
    const std::size_t end = path.nodes.back();
    for (auto f : joins_at_[end]) {
        const std::size_t other = g_.other_end(f, end);
        if (std::find(path.nodes.begin(), path.nodes.end(), other) == path.nodes.end())
            out.push_back(f);
    }
    return out;
}

// joining(path).size(), without a vector: score_path asks it of every walk.
std::size_t EdgeAnswerWriter::joining_count(const Path& path) const {
    std::size_t count = 0;
    const std::size_t end = path.nodes.back();
    for (auto f : joins_at_[end]) {
        const std::size_t other = g_.other_end(f, end);
        if (std::find(path.nodes.begin(), path.nodes.end(), other) == path.nodes.end()) ++count;
    }
    return count;
}

// Whether noun stem `noun` names the doer of verb `verb` ("player" who "plays", "founder" who
// "founded", "director" who "directed").
bool agent_noun(const std::string& noun, const std::string& verb) {
    const std::string v = text::stem(verb);
    return v.size() >= 3 && noun.size() == v.size() + 2 && noun.starts_with(v) &&
           (noun.ends_with("er") || noun.ends_with("or"));
}

// Per node: whether a fact names it as one of `class_word` by its predicate's last word ("X
// plays in club Y": Y is a club; "teams" asks for one through the lexicon's "club" cue), or by
// its verb when the class is the verb's doer ("X plays in club Y": X is a player, and Y is not,
// though "player" and "club" share the lexicon's cue).
std::vector<bool> EdgeAnswerWriter::nodes_named_as_class(const std::string& class_word) const {
    std::vector<bool> named(g_.labels.size(), false);
    if (intent_.type != AnswerType::kClass || class_word.empty()) return named;
    const std::string class_stem = text::stem(lower(class_word));
    const auto& class_cues = relation_cues(lower(class_word));
    for (const auto& f : g_.facts) {
        const auto words = text::words(lower(f.p));
        if (words.empty() || type_predicate(f.p)) continue;
        if (agent_noun(class_stem, words.front())) {
            named[f.s] = true;
            continue;
        }
        const std::string& last = words.back();
        bool same = text::stem(last) == class_stem;
        const auto& cues = relation_cues(last);
        for (auto c : cues)
            same = same || std::find(class_cues.begin(), class_cues.end(), c) != class_cues.end();
        if (same) named[f.o] = true;
    }
    return named;
}

// How well a fact's far end fits the expected answer, reached forward ([0], its object) or
// backward ([1], its subject): the type fit, the class its type facts give, less when named in
// the question. Fills end_of_class_: the ends the graph shows to be of the class asked, by their
// own facts or as ends of a relation whose other ends are (a relation's range is one class: when
// "X plays in club Y" shows one subject of "Y is in country Z" to be a club, its other subjects
// are clubs too, though the graph at hand may hold no club fact of theirs).
std::vector<std::array<double, 2>> EdgeAnswerWriter::end_fits() {
    const auto& facts = g_.facts;
    const auto& labels = g_.labels;
    const auto& intent = intent_;
    // Each node's classes, from its type facts (stemmed, lower-case).
    std::vector<std::set<std::string>> classes(labels.size());
    for (const auto& f : facts)
        if (type_predicate(f.p)) classes[f.s].insert(text::stem(lower(labels[f.o])));
    const std::string class_stem = text::stem(lower(intent.class_word));
    const std::vector<bool> named_class = nodes_named_as_class(intent.class_word);
    std::vector<char> of_class(labels.size(), 0);
    if (!intent.class_word.empty())
        for (std::size_t n = 0; n < labels.size(); ++n)
            of_class[n] = classes[n].contains(class_stem) || named_class[n] ? 1 : 0;
    // Per predicate and side: some end on that side is of the class (the relation's range).
    std::map<std::pair<std::string_view, int>, bool> range_of_class;
    for (const auto& f : facts)
        for (int side = 0; side < 2; ++side)
            range_of_class[{f.p, side}] |= of_class[side == 0 ? f.o : f.s] != 0;
    end_of_class_.assign(facts.size(), {false, false});
    std::vector<std::array<double, 2>> end_fit(facts.size());
    for (std::size_t f = 0; f < facts.size(); ++f) {
        for (int side = 0; side < 2; ++side) {
            const std::size_t end = side == 0 ? facts[f].o : facts[f].s;
            double fit = type_fit(intent, labels[end], facts[f].p, side == 0);
            end_of_class_[f][static_cast<std::size_t>(side)] =
                of_class[end] != 0 || range_of_class[{facts[f].p, side}];
            // The end's own class, when a fact gives it as the class asked ("which island"),
            // or its name does ("Club Leon" for "name a club"), or its relation's other ends.
            if (end_of_class_[f][static_cast<std::size_t>(side)]) fit = 1.0;
            // A node whose type facts give other classes only is not the X asked for ("on
            // which island": Tarnwick is a town).
            else if (!class_stem.empty() && !classes[end].empty())
                fit = std::min(fit, 0.6);
            if (intent.type == AnswerType::kClass && !class_stem.empty()) {
                for (const auto& word : text::words(labels[end]))
                    if (text::stem(word) == class_stem) fit = std::max(fit, 1.0);
            }
            if (anchor_[end] > 0.0) fit *= 0.8;  // named in the question: rarely what it asks for
            end_fit[f][static_cast<std::size_t>(side)] = fit;
        }
    }
    return end_fit;
}

// The chain index of the mention naming the class asked ("which soccer teams are based in X":
// "soccer teams"), or the chain's size when none does. An end of that class answers it
// (score_path).
std::size_t EdgeAnswerWriter::class_mention() const {
    if (intent_.type != AnswerType::kClass || intent_.class_word.empty()) return rel_.chain.size();
    const std::string class_stem = text::stem(intent_.class_word);
    for (std::size_t c = 0; c < rel_.chain.size(); ++c) {
        const auto& words = rel_.mentions[rel_.chain[c]].words;
        if (std::any_of(words.begin(), words.end(),
                        [&](auto w) { return rel_.words[w].stem == class_stem; }))
            return c;
    }
    return rel_.chain.size();
}

// The chain mentions fact `f` answers that no earlier fact of the path answered (taken_ holds
// those): each predicate word one mention; a further word for a mention it answers adds a little.
FactTake EdgeAnswerWriter::take_mentions(std::size_t f) {
    FactTake take;
    take.lowest = rel_.chain.size();
    words_used_.clear();
    answered_.clear();  // chain mentions this fact took
    for (const auto& [v, w, c] : expressed_[f]) {
        if (std::find(words_used_.begin(), words_used_.end(), w) != words_used_.end()) continue;
        if (std::find(answered_.begin(), answered_.end(), c) != answered_.end()) {
            // A further word for the same mention ("plays in club" for "football club
            // … play for"): a little more evidence, not another mention.
            words_used_.push_back(w);
            take.value += 0.02 * v;
            continue;
        }
        if (taken_[c]) continue;
        taken_[c] = 1;
        answered_.push_back(c);
        words_used_.push_back(w);
        take.took = true;
        take.value += v;
        take.lowest = std::min(take.lowest, c);
        take.highest = std::max(take.highest, c);
    }
    return take;
}

// A path's score: the share of the asked chain its facts express (each mention once; a fact
// expressing mentions before the previous fact's counts less: the chain runs the other way), the
// share of its facts that express something asked, how well its end fits the expected type, and
// a little less per hop.
double EdgeAnswerWriter::score_path(const Path& path) {
    const std::size_t hops = path.facts.size();
    taken_.assign(rel_.chain.size(), 0);
    double covered = 0.0;
    std::size_t expressing = 0;
    std::size_t previous_max = 0;
    bool any_before = false;
    for (std::size_t k = 0; k < hops; ++k) {
        const std::size_t f = path.facts[k];
        FactTake take = take_mentions(f);
        if (!take.took) {
            // A fact walked again must say something asked again ("X's spouse's spouse"):
            // back and forth over one fact is no path otherwise.
            if (std::find(path.facts.begin(), path.facts.begin() + static_cast<std::ptrdiff_t>(k),
                          f) != path.facts.begin() + static_cast<std::ptrdiff_t>(k))
                return 0.0;
            continue;
        }
        ++expressing;
        // A noun relation names its object ("X children Y": Y is a child of X); taken
        // backwards it says the opposite (X is Y's parent).
        if (!path.forward[k] && nominal_[f]) take.value *= 0.5;
        covered += any_before && take.lowest < previous_max ? 0.7 * take.value : take.value;
        previous_max = std::max(previous_max, take.highest);
        any_before = true;
    }
    // The class asked is answered by the end itself when the graph shows it of that class: no
    // relation need express it ("which soccer teams are based in X": the clubs "is in country"
    // reaches, not the players a "plays for country" fact reaches, whose "plays" says "team").
    const bool end_forward = path.forward.back();
    if (class_mention_ < rel_.chain.size() && !taken_[class_mention_] &&
        end_of_class_[path.facts.back()][end_forward ? 0 : 1])
        covered += rel_.mentions[rel_.chain[class_mention_]].weight;
    const double coverage = chain_weight_ > 0.0 ? covered / chain_weight_ : (hops == 1 ? 1.0 : 0.5);
    const double efficiency =
        chain_weight_ > 0.0 ? static_cast<double>(expressing) / static_cast<double>(hops) : 1.0;
    const double fit = end_fit_[path.facts.back()][path.forward.back() ? 0 : 1];
    // An end joined to another named entity answers both ("who plays Forward for club X").
    const double joins = static_cast<double>(std::min<std::size_t>(2, joining_count(path)));
    return anchor_[path.nodes.front()] * (0.2 + 0.8 * coverage) * (0.5 + 0.5 * efficiency) * fit *
           std::pow(0.97, static_cast<double>(hops - 1)) * (1.0 + 0.25 * joins);
}

// The natural reading of a fact from its subject: "Skel Light was designed by Ada Moor".
std::optional<std::string> EdgeAnswerWriter::state_fact(const Fact& f) const {
    const auto r = read_fact(f.p, node_text(g_.labels[f.o], question_lower_), true, literal(f.o));
    if (!r) return std::nullopt;
    return node_text(g_.labels[f.s], question_lower_) + " " + clause(*r, false, false);
}

// The named entities among the nodes, in the order the question names them, then the others.
std::vector<std::size_t> EdgeAnswerWriter::named_in_order() const {
    std::vector<std::size_t> named;
    for (const auto& mention : intent_.entities) {
        const auto it = g_.node_index.find(normalize(mention));
        if (it != g_.node_index.end() && anchor_[it->second] >= 1.0 &&
            std::find(named.begin(), named.end(), it->second) == named.end())
            named.push_back(it->second);
    }
    for (std::size_t n = 0; n < g_.labels.size(); ++n)
        if (anchor_[n] > 0.0 && std::find(named.begin(), named.end(), n) == named.end())
            named.push_back(n);
    return named;
}

// A yes/no question about two named entities ("Was Skel Light designed by Ada Moor?", "Is
// Greyhollow Light on Marrow Island?"): yes when a fact joins them and says what was asked (any
// fact, when the question names no relation); no when no fact joins them and the first one has
// the asked relation to something else; else undecided (nullopt).
std::optional<ComposedAnswer> EdgeAnswerWriter::yes_no_answer() const {
    const auto& facts = g_.facts;
    const std::vector<std::size_t> named = named_in_order();
    if (named.size() < 2) return std::nullopt;
    const auto says_asked = [&](std::size_t f) {
        return rel_.chain.empty() || !expressed_[f].empty();
    };
    const auto answer = [&](const char* word, std::size_t f) -> std::optional<ComposedAnswer> {
        const auto text = state_fact(facts[f]);
        if (!text) return std::nullopt;
        return ComposedAnswer{word,
                              {facts[f].id},
                              {std::string(word[0] == 'y' ? "Yes" : "No") + ": " +
                               capitalised(*text) + " [" + facts[f].id + "]."}};
    };
    const std::size_t first = named[0];
    for (std::size_t k = 1; k < named.size(); ++k) {
        for (auto f : g_.adjacency[first]) {
            if (g_.other_end(f, first) == named[k] && says_asked(f)) return answer("yes", f);
        }
    }
    if (rel_.chain.empty()) return std::nullopt;
    for (auto f : g_.adjacency[first]) {
        if (facts[f].s != first || !says_asked(f) || type_predicate(facts[f].p)) continue;
        const std::size_t other = facts[f].o;
        if (std::find(named.begin(), named.end(), other) != named.end()) continue;
        return answer("no", f);
    }
    return std::nullopt;
}

// One step of walk_paths: scores the walk so far, then extends it by each fact at its end.
void EdgeAnswerWriter::extend(Path& current, std::vector<Path>& found, double& best_score,
                              std::size_t& steps, std::size_t max_hops) {
    if (++steps > kMaxPathSteps) return;
    if (!current.facts.empty()) {
        current.score = score_path(current);
        if (current.score > 0.0 && current.score >= best_score - 1e-9) {
            best_score = std::max(best_score, current.score);
            found.push_back(current);
        }
    }
    if (current.facts.size() >= max_hops) return;
    const std::size_t here = current.nodes.back();
    for (auto f : g_.adjacency[here]) {
        const bool forward = g_.facts[f].s == here;
        current.facts.push_back(f);
        current.forward.push_back(forward);
        current.nodes.push_back(forward ? g_.facts[f].o : g_.facts[f].s);
        extend(current, found, best_score, steps, max_hops);
        current.facts.pop_back();
        current.forward.pop_back();
        current.nodes.pop_back();
    }
}

// Every walk from a named entity of at most one fact per asked relation (and at most three; two
// when the question names no relation), kMaxPathSteps in all; each walk kept is at least as good
// as the best before it. A fact may be walked again, back the way it came: "the spouse of X's
// spouse" is X, and "the father of X's mother's child" goes from X to the mother, back to X, on
// to the father.
std::vector<Path> EdgeAnswerWriter::walk_paths() {
    const std::size_t max_hops =
        rel_.chain.empty() ? 2 : std::clamp<std::size_t>(rel_.chain.size(), 1, kMaxHops);
    std::vector<Path> found;
    double best_score = 0.0;
    std::size_t steps = 0;
    Path current;
    for (std::size_t n = 0; n < g_.labels.size(); ++n) {
        if (anchor_[n] <= 0.0) continue;
        current = Path{{}, {}, {n}, 0.0};
        extend(current, found, best_score, steps, max_hops);
    }
    return found;
}

// The best path's equals ending elsewhere, the best path first: further answers ("who plays
// Forward?"), each end once. An equal is a sibling: the same nodes up to the last, the same
// directions and relations.
std::vector<const Path*> EdgeAnswerWriter::sibling_answers(const std::vector<Path>& found,
                                                           const Path& top) const {
    std::vector<const Path*> answers;
    std::set<std::size_t> ends;
    for (const auto& p : found) {
        if (p.score < top.score - 1e-9 || p.facts.size() != top.facts.size()) continue;
        if (!std::equal(p.nodes.begin(), p.nodes.end() - 1, top.nodes.begin()) ||
            p.forward != top.forward)
            continue;
        bool same_relations = true;
        for (std::size_t k = 0; k < p.facts.size(); ++k)
            same_relations =
                same_relations && lower(g_.facts[p.facts[k]].p) == lower(g_.facts[top.facts[k]].p);
        if (!same_relations) continue;
        if (!ends.insert(p.nodes.back()).second) continue;
        answers.push_back(&p);
    }
    return answers;
}

// The walk from its last named entity on: "the father of X's mother's child" walks X → mother →
// X → father, and reads "F is a parent of X" (every fact walked is still cited).
Path EdgeAnswerWriter::from_last_named_entity(Path path) const {
    for (std::size_t k = path.facts.size(); k-- > 1;) {
        if (anchor_[path.nodes[k]] <= 0.0) continue;
        const auto from = static_cast<std::ptrdiff_t>(k);
        path.facts.erase(path.facts.begin(), path.facts.begin() + from);
        path.forward.erase(path.forward.begin(), path.forward.begin() + from);
        path.nodes.erase(path.nodes.begin(), path.nodes.begin() + from);
        break;
    }
    return path;
}

// A single one-fact answer joined to further named entities by the same relation states them in
// one clause: "MV Curlew sails between Port Aldous and Brinehaven". The joining facts it states.
std::vector<std::size_t> EdgeAnswerWriter::merged_joins(const Path& path,
                                                        std::size_t listed) const {
    std::vector<std::size_t> merged;
    if (listed != 1 || path.facts.size() != 1) return merged;
    const auto& f = g_.facts[path.facts[0]];
    const bool end_is_s = f.s == path.nodes.back();
    for (auto j : joining(path)) {
        if (lower(g_.facts[j].p) == lower(f.p) && (g_.facts[j].s == path.nodes.back()) == end_is_s)
            merged.push_back(j);
    }
    return merged;
}

// Answer first: each fact read from its answer-side node ("Oskar Brenn founded X, which built
// the MV Curlew"). nullopt for a value (a year, a number reads best at the end: "The MV Petrel
// was built in 1911") or when a fact has no such reading.
std::optional<std::string> EdgeAnswerWriter::answer_first_sentence(
    const Path& path, const std::string& subject, bool plural,
    const std::vector<std::size_t>& merged) const {
    if (literal(path.nodes.back())) return std::nullopt;
    const std::size_t hops = path.facts.size();
    std::string sentence;
    for (std::size_t k = hops; k-- > 0;) {
        const auto& f = g_.facts[path.facts[k]];
        const std::size_t toward = path.nodes[k];  // the entity-side node
        std::vector<std::string> objects{node_text(g_.labels[toward], question_lower_)};
        for (auto j : merged)
            objects.push_back(
                node_text(g_.labels[g_.other_end(j, path.nodes.back())], question_lower_));
        auto r = read_fact(f.p, detail::join_names(objects, 0), !path.forward[k], literal(toward));
        if (!r || (k + 1 == hops && r->relative_only)) return std::nullopt;
        sentence += k + 1 == hops ? subject + " " + clause(*r, plural, false)
                                  : clause(*r, false, true, person_[path.nodes[k + 1]] != 0);
    }
    return sentence;
}

// Entity first: each fact read from the named entity on ("X was built in 1911"), a fact with no
// reading from that side as stored.
std::string EdgeAnswerWriter::entity_first_sentence(const Path& path,
                                                    const std::string& subject) const {
    const std::size_t hops = path.facts.size();
    std::string sentence;
    for (std::size_t k = 0; k < hops; ++k) {
        const auto& f = g_.facts[path.facts[k]];
        const std::size_t next = path.nodes[k + 1];
        const bool last = k + 1 == hops;
        const std::string object = last ? subject : node_text(g_.labels[next], question_lower_);
        auto r = read_fact(f.p, object, path.forward[k], literal(next));
        // No reading from this side: the fact as stored.
        const Reading stored{"is linked by \"" + f.p + "\" to", object, false, {}, {}};
        sentence += k == 0 ? node_text(g_.labels[path.nodes[0]], question_lower_) + " " +
                                 clause(r ? *r : stored, false, false)
                           : clause(r ? *r : stored, false, true, person_[path.nodes[k]] != 0);
    }
    return sentence;
}

// A single answer joined to another named entity: that fact too, the question asked it (two at
// most, not those the first sentence already states).
void EdgeAnswerWriter::add_join_sentences(const Path& path, bool merged_stated,
                                          const std::vector<std::size_t>& merged,
                                          std::vector<std::string>& sentences,
                                          std::vector<std::string>& answer_ids) const {
    const std::size_t end = path.nodes.back();
    const auto joins = joining(path);
    std::size_t supported = 0;
    for (std::size_t j = 0; j < joins.size() && supported < 2; ++j) {
        if (merged_stated && std::find(merged.begin(), merged.end(), joins[j]) != merged.end())
            continue;
        ++supported;
        const auto& f = g_.facts[joins[j]];
        const bool from_s = f.s == end;
        const std::size_t other = from_s ? f.o : f.s;
        const auto r =
            read_fact(f.p, node_text(g_.labels[other], question_lower_), from_s, literal(other));
        std::string support;
        if (r) {
            support = node_text(g_.labels[end], question_lower_) + " " + clause(*r, false, false);
        } else {
            const auto natural = state_fact(f);
            if (!natural) continue;
            support = *natural;
        }
        sentences.push_back(capitalised(support) + " [" + f.id + "].");
        if (std::find(answer_ids.begin(), answer_ids.end(), f.id) == answer_ids.end())
            answer_ids.push_back(f.id);
    }
}

// The answer of the best paths: their ends as the short answer (at most kMaxListed named, "and N
// others"), one sentence stating the walk, every fact walked cited, then the joining facts.
ComposedAnswer EdgeAnswerWriter::state_answers(const std::vector<const Path*>& answers) const {
    const std::size_t listed = std::min(answers.size(), intent_.list ? kMaxListedList : kMaxListed);
    const std::size_t others = answers.size() - listed;
    const Path path = from_last_named_entity(*answers.front());
    std::vector<std::string> names;
    for (std::size_t a = 0; a < listed; ++a)
        names.push_back(node_text(g_.labels[answers[a]->nodes.back()], question_lower_));
    const std::string listing = detail::join_names(names, others);
    // Several answers are counted: "2 lighthouses, A and B, were designed by Y"; "X damaged 2
    // things: A and B" (values, such as years, are not counted).
    const std::string count = answers.size() > 1 && !literal(path.nodes.back())
                                  ? std::to_string(answers.size()) + " " + intent_.list_noun
                                  : "";
    const std::vector<std::size_t> merged = merged_joins(path, listed);
    const auto answer_first = answer_first_sentence(
        path, count.empty() ? listing : count + ", " + listing + ",", names.size() > 1, merged);
    const bool ok = answer_first.has_value();
    const std::string sentence =
        ok ? *answer_first
           : entity_first_sentence(path, count.empty() ? listing : count + ": " + listing);

    std::vector<std::string> cited;
    for (std::size_t a = 0; a < listed; ++a)
        for (auto f : answers[a]->facts)
            if (std::find(cited.begin(), cited.end(), g_.facts[f].id) == cited.end())
                cited.push_back(g_.facts[f].id);
    if (ok)
        for (auto j : merged) cited.push_back(g_.facts[j].id);
    std::string markers;
    for (const auto& id : cited) markers += "[" + id + "]";
    std::vector<std::string> sentences{capitalised(sentence) + " " + markers + "."};
    std::vector<std::string> answer_ids = cited;
    if (listed == 1) add_join_sentences(path, ok, merged, sentences, answer_ids);

    std::vector<std::string> answer_names;
    for (std::size_t a = 0; a < listed; ++a)
        answer_names.push_back(g_.labels[answers[a]->nodes.back()]);
    // A yes/no question the facts did not decide: what they say, and no short answer.
    if (intent_.type == AnswerType::kYesNo)
        return {{}, std::move(answer_ids), std::move(sentences)};
    return {detail::join_names(answer_names, others), std::move(answer_ids), std::move(sentences)};
}

// A yes/no question is decided by the facts joining its entities when they can; otherwise the
// best walk answers, when it expresses enough of what was asked (kDecides).
ComposedAnswer EdgeAnswerWriter::write() {
    if (intent_.type == AnswerType::kYesNo) {
        if (auto decided = yes_no_answer(); decided) return std::move(*decided);
    }
    const std::vector<Path> found = walk_paths();
    const Path* top = nullptr;
    for (const auto& p : found)
        if (top == nullptr || p.score > top->score + 1e-12) top = &p;
    const bool decided = top != nullptr && (rel_.chain.empty() || top->score >= kDecides);
    if (!decided) return {{}, {}, {"The facts found do not say what the question asks."}};
    return state_answers(sibling_answers(found, *top));
}

}  // namespace

ComposedAnswer ExtractiveModel::answer_from_edges(std::string_view question,
                                                  const std::vector<LabelledEdge>& edges) const {
    FactGraph graph = fact_graph(edges);
    if (graph.facts.empty())
        return {{}, {}, {"The knowledge graph gave no facts for this question."}};
    return EdgeAnswerWriter(question, std::move(graph)).write();
}

}  // namespace glassbox::reasoner
