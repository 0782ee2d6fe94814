// Counts, value filters, superlatives and comparisons planned as graph-query attempts, and the
// match of a relation phrase against a predicate's label (reasoner/detail/aggregate_plan.hpp).
#include "reasoner/detail/aggregate_plan.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "base/ascii.hpp"
#include "reasoner/detail/name_list.hpp"
#include "reasoner/detail/question_analysis.hpp"
#include "reasoner/detail/question_intent.hpp"
#include "reasoner/detail/relation_cues.hpp"
#include "schema/untrusted_json.hpp"
#include "text/tokenize.hpp"

namespace glassbox::reasoner {

using nlohmann::json;

namespace {

// The past participles of irregular English verbs, which stemming does not bring together
// ("did X build" asks for "was built by").
const std::map<std::string, std::string, std::less<>>& participles() {
    static const std::map<std::string, std::string, std::less<>> kForms = {
        {"bear", "born"},    {"begin", "begun"},  {"break", "broken"},  {"bring", "brought"},
        {"build", "built"},  {"buy", "bought"},   {"choose", "chosen"}, {"draw", "drawn"},
        {"drive", "driven"}, {"find", "found"},   {"fly", "flown"},     {"give", "given"},
        {"grow", "grown"},   {"hold", "held"},    {"keep", "kept"},     {"know", "known"},
        {"lead", "led"},     {"make", "made"},    {"rise", "risen"},    {"sell", "sold"},
        {"sink", "sunk"},    {"speak", "spoken"}, {"steal", "stolen"},  {"take", "taken"},
        {"teach", "taught"}, {"win", "won"},      {"write", "written"}};
    return kForms;
}

// `phrase` with each irregular verb as its participle, or "" when it has none.
std::string with_participles(std::string_view phrase) {
    std::string out;
    bool changed = false;
    std::size_t start = 0;
    while (start <= phrase.size()) {
        const std::size_t end = std::min(phrase.find(' ', start), phrase.size());
        std::string word(phrase.substr(start, end - start));
        const auto it = participles().find(base::ascii_lower(word));
        if (it != participles().end()) {
            word = it->second;
            changed = true;
        }
        out += (out.empty() ? "" : " ") + word;
        start = end + 1;
    }
    return changed ? out : std::string();
}

double phrase_match(std::string_view predicate_label, std::string_view phrase) {
    const auto analysis = detail::analyze_question(phrase);
    const auto relations = detail::question_relations(analysis);
    std::string words(predicate_label);
    std::replace(words.begin(), words.end(), '_', ' ');
    if (relations.words.empty()) return 0.0;
    const auto grid = detail::predicate_match(words, relations.words);
    double covered = 0.0;
    double total = 0.0;
    for (std::size_t w = 0; w < relations.words.size(); ++w) {
        double best = 0.0;
        for (const auto& row : grid)
            if (w < row.size()) best = std::max(best, row[w]);
        covered += relations.words[w].weight * best;
        total += relations.words[w].weight;
    }
    // A predicate that says more than the phrase asks ("plays in club inverse" for "plays in
    // club") gives way to one that says just that.
    std::size_t unmatched = 0;
    for (const auto& row : grid)
        if (std::all_of(row.begin(), row.end(), [](double v) { return v < 0.45; })) ++unmatched;
    // A predicate named as the inverse of another reads the relation backwards.
    const std::string lower = base::ascii_lower(words);
    if (lower.ends_with("inverse")) ++unmatched;
    const double score = total > 0.0 ? covered / total : 0.0;
    return std::max(0.0, score - 0.05 * static_cast<double>(unmatched));
}

}  // namespace

double relation_phrase_match(std::string_view predicate_label, std::string_view phrase) {
    const double plain = phrase_match(predicate_label, phrase);
    const std::string participle = with_participles(phrase);
    return participle.empty() ? plain : std::max(plain, phrase_match(predicate_label, participle));
}

namespace detail {
namespace {

constexpr std::string_view kGraphQueryTool = "graph-query";

const std::set<std::string>& aux_words() {
    static const std::set<std::string> kWords = {
        "did", "does", "do", "were", "was",  "are",   "is",  "have", "has",  "had",  "there",
        "the", "a",    "an", "of",   "that", "which", "who", "what", "than", "been", "be"};
    return kWords;
}

// Adjectives that order by a value, in each form, with the values they order by.
struct OrderAdjective {
    std::string base;
    bool superlative = false;
};

const std::map<std::string, std::vector<ValueDimension>>& dimensions_of() {
    static const std::map<std::string, std::vector<ValueDimension>> kDims = {
        {"old", {{"age", true}, {"year", false}}},
        {"young", {{"age", false}, {"year", true}}},
        {"new", {{"year", true}, {"age", false}}},
        {"early", {{"year", false}}},
        {"first", {{"year", false}}},
        {"late", {{"year", true}}},
        {"last", {{"year", true}}},
        {"recent", {{"year", true}}},
        {"tall", {{"height", true}}},
        {"high", {{"height", true}}},
        {"short", {{"height", false}}},
        {"low", {{"height", false}}},
        {"large", {{"area", true}, {"population", true}}},
        {"big", {{"area", true}, {"population", true}}},
        {"small", {{"area", false}, {"population", false}}},
        {"long", {{"range", true}, {"length", true}}},
        {"populous", {{"population", true}}},
    };
    return kDims;
}

std::optional<OrderAdjective> order_adjective(const std::string& word) {
    static const std::map<std::string, OrderAdjective> kForms = [] {
        std::map<std::string, OrderAdjective> forms;
        const std::vector<std::tuple<std::string, std::string, std::string>> list = {
            {"old", "older", "oldest"},    {"young", "younger", "youngest"},
            {"new", "newer", "newest"},    {"early", "earlier", "earliest"},
            {"late", "later", "latest"},   {"tall", "taller", "tallest"},
            {"high", "higher", "highest"}, {"short", "shorter", "shortest"},
            {"low", "lower", "lowest"},    {"large", "larger", "largest"},
            {"big", "bigger", "biggest"},  {"small", "smaller", "smallest"},
            {"long", "longer", "longest"}, {"recent", "more_recent", "most_recent"}};
        for (const auto& [base, er, est] : list) {
            forms[er] = {base, false};
            forms[est] = {base, true};
        }
        forms["first"] = {"first", true};
        forms["last"] = {"last", true};
        return forms;
    }();
    const auto it = kForms.find(word);
    if (it == kForms.end()) return std::nullopt;
    return it->second;
}

struct Comparator {
    std::string cmp;
    bool temporal = false;
    std::size_t words = 1;  // tokens it takes
};

std::optional<Comparator> comparator_at(const std::vector<std::string>& t, std::size_t i) {
    const std::string& w = t[i];
    const std::string next = i + 1 < t.size() ? t[i + 1] : "";
    if (w == "before" || w == "until") return Comparator{w == "before" ? "<" : "<=", true, 1};
    if (w == "after" || w == "since") return Comparator{w == "after" ? ">" : ">=", true, 1};
    if ((w == "earlier" || w == "later") && next == "than")
        return Comparator{w == "earlier" ? "<" : ">", true, 2};
    if ((w == "more" || w == "greater" || w == "higher") && next == "than")
        return Comparator{">", false, 2};
    if ((w == "less" || w == "fewer" || w == "lower") && next == "than")
        return Comparator{"<", false, 2};
    if (w == "over" || w == "above") return Comparator{">", false, 1};
    if (w == "under" || w == "below") return Comparator{"<", false, 1};
    if (w == "at" && (next == "least" || next == "most"))
        return Comparator{next == "least" ? ">=" : "<=", false, 2};
    return std::nullopt;
}

bool comparator_word(const std::string& w) {
    static const std::set<std::string> kWords = {"before", "after",   "since",   "until", "over",
                                                 "above",  "under",   "below",   "more",  "less",
                                                 "fewer",  "greater", "earlier", "later"};
    return kWords.count(w) > 0;
}

bool is_number_word(const std::string& w) {
    return !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
        return (c >= '0' && c <= '9') || c == '.' || c == ',';
    }) && w.front() != '.';
}

// The question's words, lower case, each entity mention one token "@0", "@1", …
struct QuestionWords {
    std::vector<std::string> tokens;
    std::vector<std::string> entities;  // as written, by placeholder number
};

QuestionWords question_words(std::string_view question) {
    QuestionWords out;
    std::string text(question);
    auto intent = question_intent(question);
    std::vector<std::string> names = intent.entities;
    std::stable_sort(names.begin(), names.end(),
                     [](const auto& a, const auto& b) { return a.size() > b.size(); });
    for (const auto& name : names) {
        if (name.size() < 2) continue;
        // Mentions come with underscores as spaces ("Cruz_Azul_FC" → "Cruz Azul FC"): the
        // question's own spelling is what the entity lookup is asked.
        std::string written = name;
        auto at = text.find(written);
        if (at == std::string::npos) {
            std::replace(written.begin(), written.end(), ' ', '_');
            at = text.find(written);
        }
        if (at == std::string::npos) {
            const std::string lower_text = base::ascii_lower(text);
            at = lower_text.find(base::ascii_lower(written));
            if (at != std::string::npos) written = text.substr(at, written.size());
        }
        if (at == std::string::npos) continue;
        const std::string mark = " @" + std::to_string(out.entities.size()) + " ";
        out.entities.push_back(written);
        text.replace(at, written.size(), mark);
    }
    std::string word;
    const auto flush = [&] {
        if (!word.empty()) out.tokens.push_back(base::ascii_lower(word));
        word.clear();
    };
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        const bool inner_dot = c == '.' && !word.empty() && i + 1 < text.size() &&
                               text[i + 1] >= '0' && text[i + 1] <= '9';
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '@' || c == '_' || c == '\'' || inner_dot) {
            word.push_back(c);
        } else {
            flush();
        }
    }
    flush();
    for (auto& t : out.tokens)
        if (t.ends_with("'s")) t.resize(t.size() - 2);
    return out;
}

bool is_entity(const std::string& t) { return t.size() > 1 && t.front() == '@'; }

std::string entity_of(const QuestionWords& w, const std::string& t) {
    const auto n = static_cast<std::size_t>(std::stoul(t.substr(1)));
    return n < w.entities.size() ? w.entities[n] : std::string();
}

// The content_words words of tokens [from, to): neither an auxiliary nor an entity.
std::string content_words(const std::vector<std::string>& t, std::size_t from, std::size_t to) {
    std::string out;
    for (std::size_t i = from; i < to && i < t.size(); ++i) {
        if (aux_words().count(t[i]) || is_entity(t[i])) continue;
        out += (out.empty() ? "" : " ") + t[i];
    }
    return out;
}

std::size_t find_entity(const std::vector<std::string>& t, std::size_t from = 0) {
    for (std::size_t i = from; i < t.size(); ++i)
        if (is_entity(t[i])) return i;
    return t.size();
}

std::vector<ValueDimension> dims_for(const OrderAdjective& adj, const std::string& explicit_noun) {
    std::vector<ValueDimension> dims = dimensions_of().at(adj.base);
    if (!explicit_noun.empty()) return {{explicit_noun, dims.front().descending}};
    return dims;
}

bool ends_noun_phrase(const std::string& w) {
    static const std::set<std::string> kPrepositions = {"of",   "in", "on", "by",   "for",  "with",
                                                        "from", "at", "to", "that", "which"};
    return aux_words().count(w) || kPrepositions.count(w) || is_entity(w) || order_adjective(w) ||
           comparator_word(w);
}

bool plural_word(const std::string& w) {
    return w == "people" || w == "children" || w == "men" || w == "women" ||
           (w.size() > 3 && w.ends_with("s") && !w.ends_with("ss"));
}

// Where the noun phrase starting at `from` ends, just after its head noun: the first plural of
// at most three words ("soccer teams are …", "players play for …"), else the phrase's last word
// ("lighthouse was …").
std::size_t noun_phrase_end(const std::vector<std::string>& t, std::size_t from) {
    std::size_t i = from;
    while (i < t.size() && i < from + 3 && !ends_noun_phrase(t[i])) {
        if (plural_word(t[i])) return i + 1;
        ++i;
    }
    return i;
}

// The wh-noun: "which lighthouses …" → (lighthouses, its index), when the word after the
// question word is not an auxiliary.
std::pair<std::string, std::size_t> wh_noun(const std::vector<std::string>& t) {
    if (t.size() < 2) return {{}, 0};
    std::size_t i = 1;
    if (t[0] != "which" && t[0] != "what" && t[0] != "list" && t[0] != "name") return {{}, 0};
    if (t[i] == "all" || t[i] == "the") ++i;
    const std::size_t end = noun_phrase_end(t, i);
    if (end == i) return {{}, 0};
    return {t[end - 1], end - 1};
}

std::optional<AggregateShape> comparison_shape(const QuestionWords& w) {
    const auto& t = w.tokens;
    const auto orat = std::find(t.begin(), t.end(), "or");
    if (orat == t.end() || w.entities.size() < 2) return std::nullopt;
    const auto o = static_cast<std::size_t>(orat - t.begin());
    if (o == 0 || o + 1 >= t.size() || !is_entity(t[o - 1]) || !is_entity(t[o + 1]))
        return std::nullopt;
    for (std::size_t i = 0; i < o; ++i) {
        const auto adj = order_adjective(t[i]);
        if (!adj) continue;
        AggregateShape shape;
        shape.kind = AggregateKind::kComparison;
        shape.compared = {entity_of(w, t[o - 1]), entity_of(w, t[o + 1])};
        std::string noun = i + 1 < o && !is_entity(t[i + 1]) ? t[i + 1] : std::string();
        shape.dimensions = dims_for(*adj, noun);
        // Verbs between the question word (and its noun) and the adjective say which value:
        // "which was built first" → the year built.
        const auto [wh, at] = wh_noun(t);
        const std::string verbs = content_words(t, wh.empty() ? 1 : at + 1, i);
        for (auto& d : shape.dimensions)
            if (!verbs.empty() && noun.empty()) d.words = verbs + " " + d.words;
        return shape;
    }
    return std::nullopt;
}

std::optional<AggregateShape> superlative_shape(const QuestionWords& w) {
    const auto& t = w.tokens;
    for (std::size_t i = 0; i < t.size(); ++i) {
        const auto adj = order_adjective(t[i]);
        const bool most = t[i] == "most" && i + 1 < t.size() && t[i + 1] == "populous";
        if (!(adj && adj->superlative) && !most) continue;
        const OrderAdjective a = most ? OrderAdjective{"populous", true} : *adj;
        AggregateShape shape;
        shape.kind = AggregateKind::kSuperlative;
        const auto [noun, at] = wh_noun(t);
        std::size_t after = i + (most ? 2 : 1);
        std::string dimension_noun;
        if (!noun.empty()) {
            shape.noun = noun;
            if (after < t.size() && !is_entity(t[after]) && !aux_words().count(t[after]))
                dimension_noun = t[after++];
        } else if (after < t.size() && !aux_words().count(t[after]) && !is_entity(t[after])) {
            shape.noun = t[after++];
        }
        shape.dimensions = dims_for(a, dimension_noun);
        const std::size_t e = find_entity(t, after);
        if (e < t.size()) {
            shape.entity = entity_of(w, t[e]);
            shape.relation = shape.noun + " " + content_words(t, after, e);
        }
        // Verbs before the order_adjective ("which lighthouse was built first") say which value.
        const std::string verbs = content_words(t, noun.empty() ? 1 : at + 1, i);
        if (!verbs.empty() && dimension_noun.empty())
            for (auto& d : shape.dimensions) d.words = verbs + " " + d.words;
        shape.class_name = singular(shape.noun);
        if (shape.noun.empty()) return std::nullopt;
        return shape;
    }
    return std::nullopt;
}

// A comparison with a value ("before 1860", "older than 30") in a "which"/"how many" question.
bool read_filter(const QuestionWords& w, std::size_t from, AggregateShape& shape,
                 std::size_t& cmp_at) {
    const auto& t = w.tokens;
    for (std::size_t i = from; i < t.size(); ++i) {
        const auto adj = order_adjective(t[i]);
        std::optional<Comparator> c;
        std::vector<ValueDimension> dims;
        if (adj && !adj->superlative && i + 1 < t.size() && t[i + 1] == "than") {
            dims = dimensions_of().at(adj->base);
            c = Comparator{dims.front().descending ? ">" : "<", false, 2};
        } else {
            c = comparator_at(t, i);
        }
        if (!c || i + c->words >= t.size() || !is_number_word(t[i + c->words])) continue;
        std::string value = t[i + c->words];
        value.erase(std::remove(value.begin(), value.end(), ','), value.end());
        shape.cmp = c->cmp;
        shape.value = value;
        cmp_at = i;
        const std::string words = content_words(t, from, i);
        if (dims.empty()) dims = {{c->temporal ? "year" : "", false}};
        for (auto& d : dims) {
            d.words = words.empty() ? d.words : d.words.empty() ? words : words + " " + d.words;
            if (d.words.empty()) return false;
        }
        shape.dimensions = std::move(dims);
        return true;
    }
    return false;
}

std::optional<AggregateShape> count_or_filter_shape(const QuestionWords& w) {
    const auto& t = w.tokens;
    AggregateShape shape;
    std::size_t rest = 0;
    if (t.size() > 2 && t[0] == "how" && (t[1] == "many" || t[1] == "much")) {
        shape.kind = AggregateKind::kCount;
        rest = noun_phrase_end(t, 2);
        if (rest == 2) return std::nullopt;
        shape.noun = t[rest - 1];
    } else {
        const auto [noun, at] = wh_noun(t);
        if (noun.empty()) return std::nullopt;
        shape.kind = AggregateKind::kFilter;
        shape.noun = noun;
        rest = at + 1;
    }
    if (is_entity(shape.noun) || aux_words().count(shape.noun)) return std::nullopt;
    shape.class_name = singular(shape.noun);
    std::size_t cmp_at = t.size();
    const bool filtered = read_filter(w, rest, shape, cmp_at);
    if (shape.kind == AggregateKind::kFilter && !filtered) return std::nullopt;
    const std::size_t e = find_entity(t, rest);
    if (e < cmp_at) {
        shape.entity = entity_of(w, t[e]);
        const bool of_phrase = rest < t.size() && t[rest] == "of";
        shape.relation = content_words(t, rest, filtered ? std::min(cmp_at, e + 1) : t.size());
        if (of_phrase) shape.relation = shape.noun + " " + shape.relation;
        if (filtered) {
            // The value words are those after the entity, not the entity's relation.
            for (auto& d : shape.dimensions) {
                const std::string after = content_words(t, e + 1, cmp_at);
                if (!after.empty() && d.words.find(after) == std::string::npos)
                    d.words = after + " " + d.words;
                const std::string rel = content_words(t, rest, e);
                if (!rel.empty() && d.words.starts_with(rel + " "))
                    d.words.erase(0, rel.size() + 1);
            }
        }
        if (shape.relation.empty() || shape.relation == shape.noun + " ") {
            shape.relation = shape.noun;
            shape.relation_is_noun = true;
        }
        while (!shape.relation.empty() && shape.relation.back() == ' ') shape.relation.pop_back();
    }
    return shape;
}

json var_slot(const std::string& name) { return json("?" + name); }

json triple_pattern(json s, json p, json o) {
    return {{"s", std::move(s)}, {"p", std::move(p)}, {"o", std::move(o)}};
}

}  // namespace

std::string singular(std::string_view noun) {
    static const std::map<std::string, std::string, std::less<>> kIrregular = {
        {"people", "person"}, {"children", "child"}, {"men", "man"}, {"women", "woman"}};
    if (const auto it = kIrregular.find(noun); it != kIrregular.end()) return it->second;
    std::string w(noun);
    if (w.ends_with("ies") && w.size() > 4) return w.substr(0, w.size() - 3) + "y";
    for (const char* end : {"ches", "shes", "xes", "sses"})
        if (w.ends_with(end)) return w.substr(0, w.size() - 2);
    if (w.ends_with("s") && !w.ends_with("ss") && w.size() > 3) w.pop_back();
    return w;
}

std::optional<AggregateShape> aggregate_shape(std::string_view question) {
    const QuestionWords w = question_words(question);
    if (w.tokens.size() < 2) return std::nullopt;
    if (auto shape = comparison_shape(w)) return shape;
    if (auto shape = count_or_filter_shape(w)) return shape;
    if (auto shape = superlative_shape(w)) return shape;
    return std::nullopt;
}

namespace {

// The patterns relating ?x to the shape's entity, each way round.
std::vector<json> entity_patterns(const AggregateShape& s) {
    if (s.entity.empty()) return {};
    json forward = s.relation_is_noun ? triple_pattern(s.entity, s.relation, var_slot("x"))
                                      : triple_pattern(var_slot("x"), s.relation, s.entity);
    json backward = s.relation_is_noun ? triple_pattern(var_slot("x"), s.relation, s.entity)
                                       : triple_pattern(s.entity, s.relation, var_slot("x"));
    return {forward, backward};
}

void add_unique(std::vector<json>& list, json query) {
    if (std::find(list.begin(), list.end(), query) == list.end()) list.push_back(std::move(query));
}

// Every combination of class (with, without) and entity direction for one value dimension.
void add_variants(const AggregateShape& s, const ValueDimension* dim, std::vector<json>& out) {
    const auto ends = entity_patterns(s);
    const bool with_class = !s.class_name.empty() && !s.relation_is_noun;
    for (const bool use_class : {true, false}) {
        if (use_class && !with_class) continue;
        for (std::size_t d = 0; d < std::max<std::size_t>(1, ends.size()); ++d) {
            json q = {{"match", json::array()}};
            if (!ends.empty()) q["match"].push_back(ends[d]);
            if (dim) q["match"].push_back(triple_pattern(var_slot("x"), dim->words, var_slot("v")));
            if (use_class)
                q["match"].push_back(triple_pattern(var_slot("x"), "type", s.class_name));
            if (q["match"].empty()) continue;
            // A value is read through every predicate the words match: the class, the entity
            // and the value's type (a number, a year) narrow them down.
            if (dim) q["widen"] = true;
            if (!s.cmp.empty())
                q["filter"] = json::array({{{"var", "?v"}, {"cmp", s.cmp}, {"value", s.value}}});
            if (s.kind == AggregateKind::kCount) {
                q["aggregate"] = {{"fn", "count"}, {"var", "?x"}};
            } else if (dim) {
                q["order_by"] = {{"var", "?v"}, {"dir", dim->descending ? "desc" : "asc"}};
                if (s.kind == AggregateKind::kSuperlative) q["limit"] = 2;
            }
            add_unique(out, std::move(q));
        }
    }
}

}  // namespace

std::vector<json> aggregate_attempts(const AggregateShape& s) {
    std::vector<json> out;
    if (s.kind == AggregateKind::kComparison) {
        for (const auto& d : s.dimensions) {
            const json x = {{"var", "?x"}, {"values", {s.compared[0], s.compared[1]}}};
            add_unique(out,
                       {{"match", json::array({triple_pattern(x, d.words, var_slot("v"))})},
                        {"widen", true},
                        {"order_by", {{"var", "?v"}, {"dir", d.descending ? "desc" : "asc"}}}});
        }
        return out;
    }
    if (s.dimensions.empty()) {
        add_variants(s, nullptr, out);
        return out;
    }
    for (const auto& d : s.dimensions) add_variants(s, &d, out);
    return out;
}

namespace {

struct PastAttempt {
    json args;
    json observation;
    bool error = false;
    std::string error_text;
};

std::vector<PastAttempt> past_attempts(const json& steps) {
    std::vector<PastAttempt> out;
    if (!steps.is_array()) return out;
    for (const json& step : steps) {
        if (!step.is_object() || !step.contains("calls") || !step["calls"].is_array()) continue;
        for (const json& c : step["calls"]) {
            if (!c.is_object() || c.value("tool", json("")) != json(kGraphQueryTool)) continue;
            PastAttempt a;
            a.args = c.value("args", json::object());
            a.error = c.value("error", false);
            const json text = c.value("observation", json(""));
            a.error_text = text.is_string() ? text.get<std::string>() : std::string();
            auto parsed = schema::parse_untrusted_json(a.error_text);
            if (parsed && parsed->is_object()) a.observation = std::move(*parsed);
            out.push_back(std::move(a));
        }
    }
    return out;
}

bool has_class(const json& q) {
    for (const json& p : q.value("match", json::array()))
        if (p.value("p", json("")) == json("type")) return true;
    return false;
}

bool gave_rows(const AggregateShape& s, const PastAttempt& a) {
    if (a.error || !a.observation.is_object()) return false;
    const json rows = a.observation.value("rows", json::array());
    if (!rows.is_array() || rows.empty()) return false;
    if (s.kind == AggregateKind::kCount) return rows[0].value("value", 0.0) > 0.0;
    return true;
}

std::string label_of(const json& row, const char* var) {
    const auto it = row.find(var);
    return it != row.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string counted_noun(const AggregateShape& s, std::size_t n) {
    if (s.noun.empty()) return n == 1 ? "thing" : "things";
    return n == 1 ? singular(s.noun) : s.noun;
}

PlannerStep answer_from(const AggregateShape& s, const PastAttempt& a) {
    PlannerStep step;
    const json rows = a.observation["rows"];
    const std::size_t shown = a.observation.value("row_count", rows.size());
    if (s.kind == AggregateKind::kCount) {
        const auto n = static_cast<std::size_t>(rows[0].value("value", 0.0));
        std::vector<std::string> names;
        for (const json& v : rows[0].value("values", json::array()))
            if (v.is_string()) names.push_back(v.get<std::string>());
        const std::size_t listed = std::min<std::size_t>(names.size(), 12);
        names.resize(listed);
        step.final_answer = std::to_string(n);
        step.response = std::to_string(n) + " " + counted_noun(s, n) +
                        (names.empty() ? "" : ": " + join_names(names, n - listed)) + ".";
        step.thought = "The query counted " + step.response;
        return step;
    }
    if (s.kind == AggregateKind::kFilter) {
        std::vector<std::string> names;
        for (const json& r : rows) names.push_back(label_of(r, "?x"));
        const std::size_t listed = std::min<std::size_t>(names.size(), 12);
        names.resize(listed);
        const std::string list = join_names(names, shown - listed);
        step.final_answer = list;
        step.response = std::to_string(shown) + " " + counted_noun(s, shown) + ": " + list + ".";
        step.thought = "The query found " + step.response;
        return step;
    }
    // Superlatives and comparisons: the first row is the answer, its value said beside it.
    const std::string best = label_of(rows[0], "?x");
    step.final_answer = best;
    std::string values;
    for (const json& r : rows)
        values += (values.empty() ? "" : ", ") + label_of(r, "?x") + " " + label_of(r, "?v");
    step.response = best + " (" + values + ").";
    step.thought = "Ordered by value, " + best + " comes first: " + values + ".";
    return step;
}

}  // namespace

std::optional<PlannerStep> plan_aggregate_step(const AggregateShape& shape, const json& steps,
                                               std::size_t max_attempts) {
    const auto past = past_attempts(steps);
    if (!past.empty() && gave_rows(shape, past.back())) return answer_from(shape, past.back());
    if (past.size() >= max_attempts) return std::nullopt;
    const bool class_failed = std::any_of(past.begin(), past.end(), [](const PastAttempt& a) {
        return a.error && a.error_text.find("no class") != std::string::npos;
    });
    // Relation words no predicate matched are not tried again in another arrangement.
    std::set<std::string> unmatched;
    for (const auto& a : past) {
        const std::string marker = "no predicate of the knowledge graph matches \"";
        const auto at = a.error_text.find(marker);
        if (!a.error || at == std::string::npos) continue;
        const auto from = at + marker.size();
        unmatched.insert(a.error_text.substr(from, a.error_text.find('"', from) - from));
    }
    const auto uses_unmatched = [&](const json& q) {
        for (const json& p : q.value("match", json::array()))
            if (p.value("p", json("")).is_string() && unmatched.count(p.value("p", std::string())))
                return true;
        return false;
    };
    for (const json& q : aggregate_attempts(shape)) {
        if ((class_failed && has_class(q)) || uses_unmatched(q)) continue;
        if (std::any_of(past.begin(), past.end(), [&](const auto& a) { return a.args == q; }))
            continue;
        PlannerStep step;
        if (past.empty()) {
            step.thought = "The question asks about many facts at once; query the graph.";
        } else {
            const auto& last = past.back();
            step.thought = std::string("Attempt ") + std::to_string(past.size()) +
                           (last.error ? " failed (" + last.error_text.substr(0, 160) + ")"
                                       : " found nothing") +
                           "; refine the query and try again.";
        }
        step.calls.push_back({std::string(kGraphQueryTool), q});
        return step;
    }
    return std::nullopt;
}

}  // namespace detail
}  // namespace glassbox::reasoner
