// The extractive model's answer from knowledge-graph edges: the path from a named entity along
// the relations asked for, its end node as the short answer, one sentence stating both.
// Deterministic: ties broken by input order.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "text/stopwords.hpp"
#include "text/tokenize.hpp"
#include "workers/llm/extractive_model.hpp"
#include "workers/llm/extractive_question.hpp"
#include "workers/llm/question_intent.hpp"
#include "workers/llm/relation_cues.hpp"

namespace glassbox::llm {

namespace {

using detail::valid_marker_id;
using text::lower;
using text::normalize;

constexpr std::size_t kMaxFacts = 2'000;       // facts looked at (graph-rag sends 25 or so)
constexpr std::size_t kMaxPathSteps = 200'000;  // path-search steps
constexpr std::size_t kMaxHops = 3;
constexpr std::size_t kMaxListed = 5;  // answers named before "and N others"
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
        "of", "in", "by", "for", "at", "to", "with", "from", "on", "as", "under", "between",
        "after", "into", "about", "near"};
    return words.contains(w);
}

bool is_auxiliary(std::string_view w) {
    return w == "is" || w == "was" || w == "are" || w == "were";
}

// A predicate that reads as a verb phrase ("is in country", "plays position", "born in").
bool verbal_predicate(const std::vector<std::string>& w) {
    static const std::unordered_set<std::string_view> verbs{
        "is",       "are",      "was",       "were",     "has",   "have",    "had",     "plays",
        "played",   "wears",    "wore",      "lives",    "lived", "born",    "died",    "located",
        "works",    "worked",   "founded",   "directed", "wrote", "written", "owns",    "owned",
        "contains", "includes", "belongs",   "speaks",   "won",   "married", "studied", "created",
        "produced", "released", "published", "based",    "made",  "leads",   "led",     "holds",
        "held",     "uses",     "used",      "knows",    "likes", "hosts",   "hosted",  "lies",
        "sails",    "houses",   "discovered", "damaged", "built", "designed"};
    if (w.empty()) return true;
    const std::string first = lower(w.front());
    const std::string last = lower(w.back());
    return verbs.contains(first) || is_preposition(last) ||
           (first.size() > 3 && first.ends_with("ed"));
}

// The simple past of a participle ("built" → "built", "written" → "wrote").
std::string past_of(const std::string& participle) {
    static const std::unordered_map<std::string_view, std::string_view> irregular{
        {"written", "wrote"}, {"driven", "drove"},  {"given", "gave"},   {"taken", "took"},
        {"known", "knew"},    {"drawn", "drew"},    {"sung", "sang"},    {"begun", "began"},
        {"seen", "saw"},      {"chosen", "chose"},  {"spoken", "spoke"}, {"stolen", "stole"},
        {"eaten", "ate"},     {"ridden", "rode"},   {"broken", "broke"}, {"flown", "flew"},
        {"grown", "grew"},    {"thrown", "threw"},  {"done", "did"},     {"shown", "showed"},
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
    } else if (v.size() > 3 && (v.ends_with("shes") || v.ends_with("ches") || v.ends_with("sses"))) {
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
    std::string noun;  // set for a noun relation read from its subject ("spouse", "child")
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
                               object + " " + w[end - 1], false, {}, {}};
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
        const std::string noun = w.back();
        return Reading{"", "the " + noun + " " + object + " " + join_words(w, 0, w.size() - 1),
                       true, {}, {}};
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

std::string join_list(const std::vector<std::string>& items, std::size_t others) {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += (i + 1 == items.size() && others == 0) ? " and " : ", ";
        out += items[i];
    }
    if (others > 0) out += " and " + std::to_string(others) + (others == 1 ? " other" : " others");
    return out;
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
        case AnswerType::kTime: return 1.0;
        case AnswerType::kNumber: return 1.0;
        case AnswerType::kClass: {
            if (intent.class_word.empty()) return 0.85;
            const std::string c = text::stem(intent.class_word);
            for (const auto& w : text::words(p))
                if (text::stem(w) == c) return end_is_object ? 1.0 : 0.6;
            return 0.85;
        }
        case AnswerType::kPlace:
        case AnswerType::kAny:
        case AnswerType::kYesNo: return 0.85;
    }
    return 0.85;
}

// A fact that gives its subject's class ("Little Tarn type island").
bool type_predicate(const std::string& predicate) {
    const std::string p = lower(predicate);
    return p == "type" || p == "is a" || p == "instance of" || p == "has type" ||
           p == "rdf type" || p == "class";
}

}  // namespace

ComposedAnswer ExtractiveModel::answer_from_edges(std::string_view question,
                                                  const std::vector<LabelledEdge>& edges) const {
    // Facts, each once: an edge and its inverse are one fact.
    std::vector<std::string> labels;
    std::vector<std::string> node_norms;
    std::unordered_map<std::string, std::size_t> node_index;
    const auto node = [&](const std::string& label) {
        auto n = normalize(label);
        auto [it, inserted] = node_index.emplace(n, labels.size());
        if (inserted) {
            labels.push_back(label);
            node_norms.push_back(std::move(n));
        }
        return it->second;
    };
    std::vector<Fact> facts;
    std::set<std::tuple<std::size_t, std::string, std::size_t>> fact_keys;
    std::set<std::string> ids;
    for (const auto& e : edges) {
        if (facts.size() >= kMaxFacts) break;
        if (!valid_marker_id(e.id) || !ids.insert(e.id).second) continue;
        std::string predicate = e.p;
        bool inverse = false;
        const std::string lp = lower(predicate);
        for (std::string_view suffix : {std::string_view(" inverse"), std::string_view("_inverse")}) {
            if (lp.size() > suffix.size() && lp.ends_with(suffix)) {
                predicate.resize(predicate.size() - suffix.size());
                inverse = true;
            }
        }
        std::replace(predicate.begin(), predicate.end(), '_', ' ');
        std::size_t s = node(e.s);
        std::size_t o = node(e.o);
        if (inverse) std::swap(s, o);
        if (!fact_keys.emplace(s, lower(predicate), o).second) continue;
        facts.push_back({e.id, s, o, std::move(predicate)});
    }
    if (facts.empty())
        return {{}, {}, {"The knowledge graph gave no facts for this question."}};

    const auto analysis = detail::analyze_question(question);
    const QuestionIntent intent = question_intent(question, analysis);
    QuestionRelations rel = question_relations(analysis);
    // The class word of "which X" / "name an X" names the answer's type. As a relation it is
    // no hop of its own when another mention asks the same ("what faith does X's mother
    // practice") or when it is all the chain ("name a soccer club in Mexico").
    if (!intent.class_word.empty()) {
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
    const std::string question_lower = lower(question);
    const std::string question_norm = " " + normalize(question) + " ";

    // Named entities among the nodes: a mention's text, or the label written in the question.
    std::set<std::string> mentions;
    for (const auto& c : analysis.candidates)
        if (c.entity) mentions.insert(normalize(c.text));
    std::vector<double> anchor(labels.size(), 0.0);
    for (std::size_t n = 0; n < labels.size(); ++n) {
        const auto& norm = node_norms[n];
        if (mentions.contains(norm)) {
            anchor[n] = 1.0;
        } else if (norm.size() >= 3 && !text::is_stopword(norm) &&
                   question_norm.find(" " + norm + " ") != std::string::npos) {
            anchor[n] = 0.9;
        }
    }
    std::vector<std::vector<std::size_t>> adjacency(labels.size());
    for (std::size_t f = 0; f < facts.size(); ++f) {
        adjacency[facts[f].s].push_back(f);
        if (facts[f].o != facts[f].s) adjacency[facts[f].o].push_back(f);
    }
    std::vector<PredicateMatch> matches;
    for (const auto& f : facts) matches.push_back(mention_match(f.p, rel));
    double chain_weight = 0.0;
    for (auto m : rel.chain) chain_weight += rel.mentions[m].weight;

    // The chain mentions each fact can express, best first: (value, predicate word, chain
    // index). On a path each predicate word answers one mention not yet answered ("was built in
    // year" answers "built" and "when"; a second spouse fact the second "spouse").
    std::vector<std::vector<std::tuple<double, std::size_t, std::size_t>>> expressed(facts.size());
    for (std::size_t f = 0; f < facts.size(); ++f) {
        auto& pairs = expressed[f];
        for (std::size_t w = 0; w < matches[f].by_word.size(); ++w)
            for (std::size_t c = 0; c < rel.chain.size(); ++c) {
                const std::size_t m = rel.chain[c];
                const double v = rel.mentions[m].weight * matches[f].by_word[w][m];
                if (v > 0.0) pairs.emplace_back(v, w, c);
            }
        // "was born in", "is located on", "is in country": its object is a place, what
        // "where" (or "based in") asks for ("plays in club" names no place).
        const auto w = split_words(lower(facts[f].p));
        bool locative = false;
        for (std::size_t i = 1; i < w.size(); ++i) {
            if (w[i] != "in" && w[i] != "on" && w[i] != "at") continue;
            const auto& cues = i + 1 < w.size() ? relation_cues(w[i + 1])
                                                : std::vector<std::string_view>{};
            locative = locative || i + 1 == w.size() ||
                       std::find(cues.begin(), cues.end(), "location") != cues.end();
        }
        if (locative) {
            for (std::size_t c = 0; c < rel.chain.size(); ++c) {
                const auto& m = rel.mentions[rel.chain[c]];
                if (m.key == "location")
                    pairs.emplace_back(0.8 * m.weight, matches[f].by_word.size(), c);
            }
        }
        std::stable_sort(pairs.begin(), pairs.end(),
                         [](const auto& a, const auto& b) { return std::get<0>(a) > std::get<0>(b); });
    }

    std::vector<char> nominal(facts.size(), 0);
    for (std::size_t f = 0; f < facts.size(); ++f)
        nominal[f] = verbal_predicate(split_words(facts[f].p)) ? 0 : 1;

    // Each node's classes, from its type facts (stemmed, lower-case).
    std::vector<std::set<std::string>> classes(labels.size());
    for (const auto& f : facts)
        if (type_predicate(f.p)) classes[f.s].insert(text::stem(lower(labels[f.o])));

    // People: a node whose class says so, that has a gender, or that was born, died or
    // married (the subject of such a fact: "Ilse Varrow was born in Tarnwick").
    std::vector<char> person(labels.size(), 0);
    for (const auto& f : facts) {
        const std::string p = lower(f.p);
        const auto pw = split_words(p);
        const bool lived = std::any_of(pw.begin(), pw.end(), [](const std::string& w) {
            return w == "born" || w == "died" || w == "married" || w == "spouse" ||
                   w == "birthplace" || w == "birthdate";
        });
        if (p == "gender" || p == "sex" || p == "has gender" || lived)
            person[f.s] = 1;
        else if (type_predicate(f.p)) {
            const std::string c = lower(labels[f.o]);
            if (c == "person" || c == "human" || c == "people") person[f.s] = 1;
        }
    }

    // The facts joining a path's end to named entities off the path, one per entity (a type
    // fact is not one: "which town" names a class, not an entity to join).
    std::vector<std::vector<std::size_t>> joins_at(labels.size());  // facts to named entities
    for (std::size_t n = 0; n < labels.size(); ++n) {
        std::set<std::size_t> reached;
        for (auto f : adjacency[n]) {
            const std::size_t other = facts[f].s == n ? facts[f].o : facts[f].s;
            if (anchor[other] > 0.0 && !type_predicate(facts[f].p) && reached.insert(other).second)
                joins_at[n].push_back(f);
        }
    }
    const auto joining = [&](const Path& path) {
        std::vector<std::size_t> out;
        const std::size_t end = path.nodes.back();
        for (auto f : joins_at[end]) {
            const std::size_t other = facts[f].s == end ? facts[f].o : facts[f].s;
            if (std::find(path.nodes.begin(), path.nodes.end(), other) == path.nodes.end())
                out.push_back(f);
        }
        return out;
    };
    const auto joining_count = [&](const Path& path) {
        std::size_t count = 0;
        const std::size_t end = path.nodes.back();
        for (auto f : joins_at[end]) {
            const std::size_t other = facts[f].s == end ? facts[f].o : facts[f].s;
            if (std::find(path.nodes.begin(), path.nodes.end(), other) == path.nodes.end())
                ++count;
        }
        return count;
    };

    // How well a fact's far end fits the expected answer, reached forward ([0], its object)
    // or backward ([1], its subject): the type fit, the class its type facts give, less when
    // named in the question.
    const std::string class_stem = text::stem(lower(intent.class_word));
    std::vector<std::array<double, 2>> end_fit(facts.size());
    for (std::size_t f = 0; f < facts.size(); ++f) {
        for (int side = 0; side < 2; ++side) {
            const std::size_t end = side == 0 ? facts[f].o : facts[f].s;
            double fit = type_fit(intent, labels[end], facts[f].p, side == 0);
            // The end's own class, when a fact gives it as the class asked ("which island"),
            // or its name does ("Club Leon" for "name a club").
            if (!intent.class_word.empty() && classes[end].contains(class_stem)) fit = 1.0;
            // A node whose type facts give other classes only is not the X asked for ("on
            // which island": Tarnwick is a town).
            else if (!class_stem.empty() && !classes[end].empty()) fit = std::min(fit, 0.6);
            if (intent.type == AnswerType::kClass && !class_stem.empty()) {
                for (const auto& word : text::words(labels[end]))
                    if (text::stem(word) == class_stem) fit = std::max(fit, 1.0);
            }
            if (anchor[end] > 0.0) fit *= 0.8;  // named in the question: rarely what it asks for
            end_fit[f][static_cast<std::size_t>(side)] = fit;
        }
    }

    // A path's score: the share of the asked chain its facts express (each mention once; a
    // fact expressing mentions before the previous fact's counts less: the chain runs the
    // other way), the share of its facts that express something asked, how well its end fits
    // the expected type, and a little less per hop.
    std::vector<char> taken;  // scratch of score_path
    std::vector<std::size_t> words_used;
    std::vector<std::size_t> answered;
    const auto score_path = [&](const Path& path) {
        const std::size_t hops = path.facts.size();
        taken.assign(rel.chain.size(), 0);
        double covered = 0.0;
        std::size_t expressing = 0;
        std::size_t previous_max = 0;
        bool any_before = false;
        for (std::size_t k = 0; k < hops; ++k) {
            const std::size_t f = path.facts[k];
            bool took = false;
            std::size_t lowest = rel.chain.size();
            std::size_t highest = 0;
            double value = 0.0;
            words_used.clear();
            answered.clear();  // chain mentions this fact took
            for (const auto& [v, w, c] : expressed[f]) {
                if (std::find(words_used.begin(), words_used.end(), w) != words_used.end()) continue;
                if (std::find(answered.begin(), answered.end(), c) != answered.end()) {
                    // A further word for the same mention ("plays in club" for "football club
                    // … play for"): a little more evidence, not another mention.
                    words_used.push_back(w);
                    value += 0.02 * v;
                    continue;
                }
                if (taken[c]) continue;
                taken[c] = 1;
                answered.push_back(c);
                words_used.push_back(w);
                took = true;
                value += v;
                lowest = std::min(lowest, c);
                highest = std::max(highest, c);
            }
            if (!took) {
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
            if (!path.forward[k] && nominal[f]) value *= 0.5;
            covered += any_before && lowest < previous_max ? 0.7 * value : value;
            previous_max = std::max(previous_max, highest);
            any_before = true;
        }
        const double coverage = chain_weight > 0.0 ? covered / chain_weight
                                                   : (hops == 1 ? 1.0 : 0.5);
        const double efficiency =
            chain_weight > 0.0 ? static_cast<double>(expressing) / static_cast<double>(hops) : 1.0;
        const double fit = end_fit[path.facts.back()][path.forward.back() ? 0 : 1];
        // An end joined to another named entity answers both ("who plays Forward for club X").
        const double joins = static_cast<double>(std::min<std::size_t>(2, joining_count(path)));
        return anchor[path.nodes.front()] * (0.2 + 0.8 * coverage) * (0.5 + 0.5 * efficiency) *
               fit * std::pow(0.97, static_cast<double>(hops - 1)) * (1.0 + 0.25 * joins);
    };

    // The natural reading of a fact from its subject: "Skel Light was designed by Ada Moor".
    const auto literal = [&](std::size_t n) {
        return looks_like_time(labels[n]) || looks_like_number(labels[n]);
    };
    const auto state_fact = [&](const Fact& f) -> std::optional<std::string> {
        const auto r = read_fact(f.p, node_text(labels[f.o], question_lower), true, literal(f.o));
        if (!r) return std::nullopt;
        return node_text(labels[f.s], question_lower) + " " + clause(*r, false, false);
    };
    const auto yes_no_from_facts = [&]() -> std::optional<ComposedAnswer> {
        // The named entities, in the order the question names them.
        std::vector<std::size_t> named;
        for (const auto& mention : intent.entities) {
            const auto it = node_index.find(normalize(mention));
            if (it != node_index.end() && anchor[it->second] >= 1.0 &&
                std::find(named.begin(), named.end(), it->second) == named.end())
                named.push_back(it->second);
        }
        for (std::size_t n = 0; n < labels.size(); ++n)
            if (anchor[n] > 0.0 && std::find(named.begin(), named.end(), n) == named.end())
                named.push_back(n);
        if (named.size() < 2) return std::nullopt;
        const auto says_asked = [&](std::size_t f) { return rel.chain.empty() || !expressed[f].empty(); };
        const auto answer = [&](const char* word, std::size_t f) -> std::optional<ComposedAnswer> {
            const auto text = state_fact(facts[f]);
            if (!text) return std::nullopt;
            return ComposedAnswer{word, {facts[f].id},
                                  {std::string(word[0] == 'y' ? "Yes" : "No") + ": " +
                                   capitalised(*text) + " [" + facts[f].id + "]."}};
        };
        const std::size_t first = named[0];
        for (std::size_t k = 1; k < named.size(); ++k) {
            for (auto f : adjacency[first]) {
                const std::size_t other = facts[f].s == first ? facts[f].o : facts[f].s;
                if (other == named[k] && says_asked(f)) return answer("yes", f);
            }
        }
        if (rel.chain.empty()) return std::nullopt;
        for (auto f : adjacency[first]) {
            if (facts[f].s != first || !says_asked(f) || type_predicate(facts[f].p)) continue;
            const std::size_t other = facts[f].o;
            if (std::find(named.begin(), named.end(), other) != named.end()) continue;
            return answer("no", f);
        }
        return std::nullopt;
    };

    // A yes/no question about two named entities ("Was Skel Light designed by Ada Moor?", "Is
    // Greyhollow Light on Marrow Island?"): yes when a fact joins them and says what was
    // asked (any fact, when the question names no relation); no when no fact joins them and
    // the first one has the asked relation to something else; else undecided.
    if (intent.type == AnswerType::kYesNo) {
        if (auto decided = yes_no_from_facts(); decided) return std::move(*decided);
    }

    // Every walk from a named entity of at most one fact per asked relation (and at most
    // three; two when the question names no relation). A fact may be walked again, back the
    // way it came: "the spouse of X's spouse" is X, and "the father of X's mother's child"
    // goes from X to the mother, back to X, on to the father.
    const std::size_t max_hops =
        rel.chain.empty() ? 2 : std::clamp<std::size_t>(rel.chain.size(), 1, kMaxHops);
    std::vector<Path> found;  // each at least as good as the best before it
    double best_score = 0.0;
    std::size_t steps = 0;
    Path current;
    const auto extend = [&](auto&& self) -> void {
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
        for (auto f : adjacency[here]) {
            const bool forward = facts[f].s == here;
            current.facts.push_back(f);
            current.forward.push_back(forward);
            current.nodes.push_back(forward ? facts[f].o : facts[f].s);
            self(self);
            current.facts.pop_back();
            current.forward.pop_back();
            current.nodes.pop_back();
        }
    };
    for (std::size_t n = 0; n < labels.size(); ++n) {
        if (anchor[n] <= 0.0) continue;
        current = Path{{}, {}, {n}, 0.0};
        extend(extend);
    }

    // The best path; its equals ending elsewhere are further answers ("who plays Forward?").
    const Path* top = nullptr;
    for (const auto& p : found)
        if (top == nullptr || p.score > top->score + 1e-12) top = &p;
    const bool decided = top != nullptr && (rel.chain.empty() || top->score >= kDecides);
    if (!decided) {
        std::vector<std::string> sentences{
            "The facts found do not say what the question asks."};
        return {{}, {}, std::move(sentences)};
    }
    std::vector<const Path*> answers;
    std::set<std::size_t> ends;
    for (const auto& p : found) {
        if (p.score < top->score - 1e-9 || p.facts.size() != top->facts.size()) continue;
        // Siblings of the best path: the same nodes up to the last, the same relations.
        if (!std::equal(p.nodes.begin(), p.nodes.end() - 1, top->nodes.begin()) ||
            p.forward != top->forward)
            continue;
        bool same_relations = true;
        for (std::size_t k = 0; k < p.facts.size(); ++k)
            same_relations = same_relations &&
                             lower(facts[p.facts[k]].p) == lower(facts[top->facts[k]].p);
        if (!same_relations) continue;
        if (!ends.insert(p.nodes.back()).second) continue;
        answers.push_back(&p);
    }
    const std::size_t listed = std::min(answers.size(), kMaxListed);
    const std::size_t others = answers.size() - listed;
    // The sentence states the walk from its last named entity on: "the father of X's mother's
    // child" walks X → mother → X → father, and reads "F is a parent of X" (every fact walked
    // is still cited).
    Path path = *answers.front();
    for (std::size_t k = path.facts.size(); k-- > 1;) {
        if (anchor[path.nodes[k]] <= 0.0) continue;
        const auto from = static_cast<std::ptrdiff_t>(k);
        path.facts.erase(path.facts.begin(), path.facts.begin() + from);
        path.forward.erase(path.forward.begin(), path.forward.begin() + from);
        path.nodes.erase(path.nodes.begin(), path.nodes.begin() + from);
        break;
    }

    // Answer first: each fact read from its answer-side node ("Oskar Brenn founded X, which
    // built the MV Curlew"); for a value, or when a fact has no such reading, from the named
    // entity ("X was built in 1911").
    const std::size_t hops = path.facts.size();
    std::vector<std::string> names;
    for (std::size_t a = 0; a < listed; ++a) names.push_back(node_text(labels[answers[a]->nodes.back()], question_lower));
    const std::string subject = join_list(names, others);
    const bool plural = names.size() > 1;
    std::string sentence;
    // A value (a year, a number) reads best at the end: "The MV Petrel was built in 1911".
    bool ok = !literal(path.nodes.back());
    // A single one-fact answer joined to further named entities by the same relation states
    // them in one clause: "MV Curlew sails between Port Aldous and Brinehaven".
    std::vector<std::size_t> merged;  // joining facts stated in the first sentence
    if (listed == 1 && hops == 1) {
        const auto& f = facts[path.facts[0]];
        const bool end_is_s = f.s == path.nodes.back();
        for (auto j : joining(path)) {
            if (lower(facts[j].p) == lower(f.p) && (facts[j].s == path.nodes.back()) == end_is_s)
                merged.push_back(j);
        }
    }
    for (std::size_t k = hops; k-- > 0 && ok;) {
        const auto& f = facts[path.facts[k]];
        const std::size_t toward = path.nodes[k];  // the entity-side node
        std::vector<std::string> objects{node_text(labels[toward], question_lower)};
        for (auto j : merged) {
            const std::size_t other =
                facts[j].s == path.nodes.back() ? facts[j].o : facts[j].s;
            objects.push_back(node_text(labels[other], question_lower));
        }
        auto r = read_fact(f.p, join_list(objects, 0), !path.forward[k], literal(toward));
        if (!r || (k + 1 == hops && r->relative_only)) {
            ok = false;
            break;
        }
        sentence += k + 1 == hops ? subject + " " + clause(*r, plural, false)
                                  : clause(*r, false, true, person[path.nodes[k + 1]] != 0);
    }
    if (!ok) {
        sentence.clear();
        for (std::size_t k = 0; k < hops; ++k) {
            const auto& f = facts[path.facts[k]];
            const std::size_t next = path.nodes[k + 1];
            const bool last = k + 1 == hops;
            const std::string object = last ? subject : node_text(labels[next], question_lower);
            auto r = read_fact(f.p, object, path.forward[k], literal(next));
            // No reading from this side: the fact as stored.
            const Reading stored{"is linked by \"" + f.p + "\" to", object, false, {}, {}};
            sentence += k == 0 ? node_text(labels[path.nodes[0]], question_lower) + " " +
                                     clause(r ? *r : stored, false, false)
                               : clause(r ? *r : stored, false, true, person[path.nodes[k]] != 0);
        }
    }
    std::vector<std::string> cited;
    for (std::size_t a = 0; a < listed; ++a)
        for (auto f : answers[a]->facts)
            if (std::find(cited.begin(), cited.end(), facts[f].id) == cited.end())
                cited.push_back(facts[f].id);
    if (ok)
        for (auto j : merged) cited.push_back(facts[j].id);
    std::string markers;
    for (const auto& id : cited) markers += "[" + id + "]";
    std::vector<std::string> sentences{capitalised(sentence) + " " + markers + "."};
    std::vector<std::string> answer_ids = cited;

    // A single answer joined to another named entity: that fact too, the question asked it.
    if (listed == 1) {
        const std::size_t end = path.nodes.back();
        const auto joins = joining(path);
        std::size_t supported = 0;
        for (std::size_t j = 0; j < joins.size() && supported < 2; ++j) {
            if (ok && std::find(merged.begin(), merged.end(), joins[j]) != merged.end()) continue;
            ++supported;
            const auto& f = facts[joins[j]];
            const bool from_s = f.s == end;
            const std::size_t other = from_s ? f.o : f.s;
            const auto r = read_fact(f.p, node_text(labels[other], question_lower), from_s,
                                     literal(other));
            std::string support;
            if (r) {
                support = node_text(labels[end], question_lower) + " " + clause(*r, false, false);
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
    std::vector<std::string> answer_names;
    for (std::size_t a = 0; a < listed; ++a) answer_names.push_back(labels[answers[a]->nodes.back()]);
    // A yes/no question the facts did not decide: what they say, and no short answer.
    if (intent.type == AnswerType::kYesNo) return {{}, std::move(answer_ids), std::move(sentences)};
    return {join_list(answer_names, others), std::move(answer_ids), std::move(sentences)};
}

}  // namespace glassbox::llm
