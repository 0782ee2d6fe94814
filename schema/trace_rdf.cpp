// The RDF renderings of a stored trace: Turtle, N-Triples, N-Quads and JSON-LD.
#include "schema/trace_rdf.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "schema/nquads.hpp"
#include "schema/term_json.hpp"

namespace glassbox::schema::rdf {
namespace {

using nlohmann::json;

bool is_integer_lexical(std::string_view text) {
    std::size_t i = (!text.empty() && (text[0] == '+' || text[0] == '-')) ? 1 : 0;
    if (i >= text.size()) return false;
    return std::all_of(text.begin() + static_cast<std::ptrdiff_t>(i), text.end(),
                       [](char c) { return c >= '0' && c <= '9'; });
}

bool is_simple_local_name(std::string_view local) {
    if (local.empty()) return false;
    const auto c0 = static_cast<unsigned char>(local.front());
    if (!((c0 >= 'a' && c0 <= 'z') || (c0 >= 'A' && c0 <= 'Z') || c0 == '_')) return false;
    return std::all_of(local.begin(), local.end(), [](char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
               ch == '_' || ch == '-';
    });
}

// ---- Turtle -------------------------------------------------------------------------------

std::string turtle_iri(std::string_view iri) {
    if (auto name = prefixed_name(iri)) return *name;
    return to_ntriples(schema::iri(iri));
}

std::string turtle_term(const Term& term) {
    switch (term.kind()) {
        case Term::Kind::kIri:
            return turtle_iri(term.as_iri().value);
        case Term::Kind::kBlankNode:
            return to_ntriples(term);
        case Term::Kind::kLiteral: {
            const auto& lit = term.as_literal();
            // Bare forms only where they give back the same lexical form and datatype.
            if (lit.language.empty() && lit.datatype == kXsdInteger &&
                is_integer_lexical(lit.value)) {
                return lit.value;
            }
            if (lit.language.empty() && lit.datatype == kXsdBoolean &&
                (lit.value == "true" || lit.value == "false")) {
                return lit.value;
            }
            // The N-Triples string escapes (\" \\ \n \r \t \b \f \uXXXX) are valid Turtle
            // ECHAR/UCHAR.
            std::string out = to_ntriples(literal(lit.value));
            if (!lit.language.empty()) {
                out += '@';
                out += lit.language;
            } else if (!lit.datatype.empty() && lit.datatype != kXsdString) {
                out += "^^";
                out += turtle_iri(lit.datatype);
            }
            return out;
        }
        case Term::Kind::kTriple: {
            const auto& t = term.as_triple();  // Turtle 1.2 triple term
            return "<< " + turtle_term(t.s) + " " + turtle_term(t.p) + " " + turtle_term(t.o) +
                   " >>";
        }
    }
    return {};
}

// ---- JSON-LD --------------------------------------------------------------------------------

json jsonld_node_id(const Term& term);

json jsonld_embedded(const Triple& triple) {
    json node = json::object();
    node["@id"] = jsonld_node_id(triple.s);
    json value;
    if (triple.o.is_literal()) {
        const auto& lit = triple.o.as_literal();
        value = json{{"@value", lit.value}};
        if (!lit.language.empty()) {
            value["@language"] = lit.language;
        } else if (!lit.datatype.empty() && lit.datatype != kXsdString) {
            value["@type"] = lit.datatype;
        }
    } else {
        value = json{{"@id", jsonld_node_id(triple.o)}};
    }
    node[triple.p.is_iri() ? triple.p.as_iri().value : term_key(triple.p)] = json::array({value});
    return node;
}

// An "@id" value: the IRI, "_:label", or (JSON-LD-star) an embedded node for a quoted triple.
json jsonld_node_id(const Term& term) {
    switch (term.kind()) {
        case Term::Kind::kIri:
            return term.as_iri().value;
        case Term::Kind::kBlankNode:
            return to_ntriples(term);  // "_:label", the label made valid
        case Term::Kind::kTriple:
            return jsonld_embedded(term.as_triple());
        case Term::Kind::kLiteral:
            break;
    }
    return term_key(term);
}

json jsonld_value(const Term& term) {
    if (!term.is_literal()) return json{{"@id", jsonld_node_id(term)}};
    const auto& lit = term.as_literal();
    json value{{"@value", lit.value}};
    if (!lit.language.empty()) {
        value["@language"] = lit.language;
    } else if (!lit.datatype.empty() && lit.datatype != kXsdString) {
        value["@type"] = lit.datatype;
    }
    return value;
}

void collect_triples(const TraceDetail& trace, std::unordered_set<std::string>& seen,
                     std::vector<Triple>& out) {
    for (const auto& event : trace.events) {
        for (const auto& triple : event.triples) {
            if (seen.insert(quad_key(triple)).second) out.push_back(triple);
        }
    }
    for (const auto& sub : trace.subtraces) collect_triples(sub, seen, out);
}

}  // namespace

std::optional<std::string> prefixed_name(std::string_view iri) {
    for (const auto& prefix : kPrefixes) {
        if (iri.size() > prefix.ns.size() && iri.substr(0, prefix.ns.size()) == prefix.ns) {
            const auto local = iri.substr(prefix.ns.size());
            if (is_simple_local_name(local))
                return std::string(prefix.name) + ":" + std::string(local);
        }
    }
    return std::nullopt;
}

std::string spo_key(const Triple& triple) { return schema::to_ntriples(triple); }
std::string quad_key(const Triple& triple) { return schema::to_nquads(triple); }
std::string term_key(const Term& term) { return schema::to_ntriples(term); }

std::vector<Triple> trace_triples(const TraceDetail& trace) {
    std::unordered_set<std::string> seen;
    std::vector<Triple> out;
    collect_triples(trace, seen, out);
    return out;
}

// The invalidations as PROV, in their own named graph (urn:graph:invalidation) beside the
// trace's: each change an activity, the run's answer (its last step) and the removed sources
// prov:wasInvalidatedBy it, each removed fact a statement invalidated by it. The stored trace
// itself is never rewritten.
std::vector<Triple> invalidation_triples(const TraceDetail& trace) {
    namespace v = vocab;
    const std::string graph(kInvalidationGraph);
    std::vector<Triple> out;
    const auto add = [&](Term s, std::string_view p, Term o) {
        out.push_back(make_triple(std::move(s), iri(p), std::move(o), graph));
    };
    const std::string answer =
        trace.events.empty() ? trace.session.session : trace.events.back().explain_id;
    std::size_t node = 0;
    for (const auto& a : trace.affected) {
        const auto change = iri(a.change);
        add(change, v::kRdfType, iri(v::kProvActivity));
        add(change, v::kRdfType, iri(v::kKnowledgeChange));
        if (!a.kind.empty()) add(change, v::kChangeKind, literal(a.kind));
        if (!a.at.empty()) add(change, v::kProvEndedAtTime, xsd_datetime(a.at));
        add(iri(answer), v::kProvWasInvalidatedBy, change);
        for (const auto& src : a.sources) add(iri(src), v::kProvWasInvalidatedBy, change);
        for (const auto& f : a.facts) {
            auto parsed = parse_nquads_line(f + " .", 1);
            if (!parsed || !*parsed) continue;
            const auto r = blank("invalidated" + std::to_string(node++));
            add(r, v::kRdfType, iri(v::kRdfStatement));
            add(r, v::kRdfSubject, (*parsed)->s);
            add(r, v::kRdfPredicate, (*parsed)->p);
            add(r, v::kRdfObject, (*parsed)->o);
            add(r, v::kProvWasInvalidatedBy, change);
        }
    }
    return out;
}

// The trace's triples, then its invalidations' (invalidation_triples).
std::vector<Triple> shown_triples(const TraceDetail& trace) {
    auto triples = trace_triples(trace);
    auto more = invalidation_triples(trace);
    triples.insert(triples.end(), more.begin(), more.end());
    return triples;
}

std::vector<Triple> distinct_triples(const std::vector<Triple>& triples) {
    std::unordered_set<std::string> seen;
    std::vector<Triple> out;
    for (const auto& triple : triples) {
        if (!seen.insert(spo_key(triple)).second) continue;
        Triple copy = triple;
        copy.graph.reset();
        out.push_back(std::move(copy));
    }
    return out;
}

std::string render_turtle(const std::vector<Triple>& triples) {
    const auto distinct = distinct_triples(triples);
    std::set<std::string> graphs;
    for (const auto& triple : triples) graphs.insert(triple.graph.value_or(""));
    std::string out = "# glassbox trace. Turtle has no named graphs: these are the triples of ";
    if (graphs.empty() || (graphs.size() == 1 && *graphs.begin() == vocab::kRetrievalGraph)) {
        out += "<" + std::string(vocab::kRetrievalGraph) + ">";
    } else {
        out += "the graphs";
        for (const auto& graph : graphs)
            out += graph.empty() ? std::string(" (default)") : " <" + graph + ">";
        out += ", merged";
    }
    out += ".\n";
    for (const auto& prefix : kPrefixes) {
        out += "@prefix " + std::string(prefix.name) + ": <" + std::string(prefix.ns) + "> .\n";
    }

    // Subjects, then predicates, in first-seen order; rdf:type first, written `a`.
    std::vector<std::string> subject_order;
    std::unordered_map<std::string, std::vector<const Triple*>> by_subject;
    for (const auto& triple : distinct) {
        const std::string key = term_key(triple.s);
        auto [it, inserted] = by_subject.try_emplace(key);
        if (inserted) subject_order.push_back(key);
        it->second.push_back(&triple);
    }
    for (const auto& key : subject_order) {
        const auto& about = by_subject[key];
        std::vector<std::string> predicate_order;
        std::unordered_map<std::string, std::vector<const Triple*>> by_predicate;
        for (const Triple* triple : about) {
            const std::string p = term_key(triple->p);
            auto [it, inserted] = by_predicate.try_emplace(p);
            if (inserted) predicate_order.push_back(p);
            it->second.push_back(triple);
        }
        const std::string rdf_type = term_key(iri(vocab::kRdfType));
        std::stable_partition(predicate_order.begin(), predicate_order.end(),
                              [&](const std::string& p) { return p == rdf_type; });
        out += "\n" + turtle_term(about.front()->s);
        bool first_predicate = true;
        for (const auto& p : predicate_order) {
            const auto& values = by_predicate[p];
            out += first_predicate ? " " : " ;\n    ";
            first_predicate = false;
            out += p == rdf_type ? std::string("a") : turtle_term(values.front()->p);
            bool first_object = true;
            for (const Triple* triple : values) {
                out += first_object ? " " : ", ";
                first_object = false;
                out += turtle_term(triple->o);
            }
        }
        out += " .\n";
    }
    return out;
}

std::string render_ntriples(const std::vector<Triple>& triples) {
    std::string out;
    for (const auto& triple : distinct_triples(triples)) {
        out += to_ntriples(triple);
        out += '\n';
    }
    return out;
}

std::string render_nquads(const std::vector<Triple>& triples) {
    std::unordered_set<std::string> seen;
    std::string out;
    for (const auto& triple : triples) {
        std::string line = to_nquads(triple);
        if (!seen.insert(line).second) continue;
        out += line;
        out += '\n';
    }
    return out;
}

json render_jsonld(const std::vector<Triple>& triples) {
    // graph ("" = default) → subject key → node object, all in first-seen order.
    struct GraphNodes {
        std::vector<std::string> order;
        std::unordered_map<std::string, json> nodes;
    };
    std::vector<std::string> graph_order;
    std::unordered_map<std::string, GraphNodes> graphs;
    std::unordered_set<std::string> seen;
    for (const auto& triple : triples) {
        if (!seen.insert(quad_key(triple)).second) continue;
        const std::string graph = triple.graph.value_or("");
        auto [git, new_graph] = graphs.try_emplace(graph);
        if (new_graph) graph_order.push_back(graph);
        const std::string subject = term_key(triple.s);
        auto [nit, new_node] = git->second.nodes.try_emplace(subject, json::object());
        if (new_node) {
            git->second.order.push_back(subject);
            nit->second["@id"] = jsonld_node_id(triple.s);
        }
        json& node = nit->second;
        const bool is_type =
            triple.p == iri(vocab::kRdfType) && (triple.o.is_iri() || triple.o.is_blank());
        if (is_type) {
            node["@type"].push_back(triple.o.is_iri() ? json(triple.o.as_iri().value)
                                                      : jsonld_node_id(triple.o));
        } else {
            const std::string predicate =
                triple.p.is_iri() ? triple.p.as_iri().value : term_key(triple.p);
            node[predicate].push_back(jsonld_value(triple.o));
        }
    }
    json out = json::array();
    for (const auto& graph : graph_order) {
        auto& nodes = graphs[graph];
        json list = json::array();
        for (const auto& subject : nodes.order) list.push_back(std::move(nodes.nodes[subject]));
        if (graph.empty()) {
            for (auto& node : list) out.push_back(std::move(node));
        } else {
            out.push_back(json{{"@id", graph}, {"@graph", std::move(list)}});
        }
    }
    return out;
}

}  // namespace glassbox::schema::rdf
