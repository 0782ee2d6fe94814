// A triples-batch reply read with each distinct term decoded once (schema/triples_batch_terms).
#include "schema/triples_batch_terms.hpp"

#include <unordered_map>
#include <utility>

#include "schema/json_fast.hpp"
#include "schema/messages.hpp"
#include "schema/term_text.hpp"

namespace glassbox::schema {
namespace {

// The fast read: the text's terms looked up by their bytes, each new one read by read_json_term
// (so each as decode_text reads it); false for anything that reader would leave to the tree.
class BatchTermsReader {
public:
    explicit BatchTermsReader(TriplesBatchTerms& out) : out_(out) {}

    bool read(std::string_view text) {
        JsonCursor r(text);
        JsonKeys seen;
        const bool read = r.object([&](std::string_view key) {
            if (key == "labels") {
                out_.labelled = true;
                return seen.first(2) &&
                       r.array([&] { return labels(r, out_.labels.emplace_back()); });
            }
            if (key != "results") return r.skip();
            return seen.first(1) &&
                   r.array([&] { return triples(r, out_.results.emplace_back()); });
        });
        return read && r.at_end();
    }

private:
    static bool labels(JsonCursor& r, std::vector<JsonText>& out) {
        return r.array([&] { return r.raw_string(out.emplace_back()); });
    }

    bool triples(JsonCursor& r, std::vector<TriplesBatchTerms::TermIndexes>& out) {
        return r.array([&] { return triple(r, out.emplace_back()); });
    }

    // As read_json_triple: any key order, unknown keys skipped, "g" a string (not kept).
    bool triple(JsonCursor& r, TriplesBatchTerms::TermIndexes& out) {
        enum : unsigned { kS = 1, kP = 2, kO = 4, kG = 8 };
        JsonKeys keys;
        JsonText graph;
        const bool read = r.object([&](std::string_view key) {
            if (key == "s") return keys.first(kS) && term(r, out.s);
            if (key == "p") return keys.first(kP) && term(r, out.p);
            if (key == "o") return keys.first(kO) && term(r, out.o);
            if (key == "g") return keys.first(kG) && r.raw_string(graph);
            return r.skip();
        });
        return read && (keys.seen() & (kS | kP | kO)) == (kS | kP | kO);
    }

    // The term at the cursor: its bytes seen before name the same term; new bytes are read.
    bool term(JsonCursor& r, std::uint32_t& index) {
        r.ws();
        const char* start = r.position();
        if (!r.skip()) return false;
        const std::string_view bytes(start, static_cast<std::size_t>(r.position() - start));
        const auto [it, fresh] =
            seen_.try_emplace(bytes, static_cast<std::uint32_t>(out_.terms.size()));
        if (fresh) {
            JsonCursor inner(bytes);
            if (!read_json_term(inner, out_.terms.emplace_back()) || !inner.at_end()) return false;
        }
        index = it->second;
        return true;
    }

    TriplesBatchTerms& out_;
    std::unordered_map<std::string_view, std::uint32_t> seen_;
};

// The tree decoder's reply in the same form: each term on its own, the labels owned.
TriplesBatchTerms batch_terms_of(TriplesBatchResponse&& reply) {
    TriplesBatchTerms out;
    out.results.reserve(reply.results.size());
    for (auto& list : reply.results) {
        auto& indexes = out.results.emplace_back();
        indexes.reserve(list.size());
        for (auto& t : list) {
            const auto at = static_cast<std::uint32_t>(out.terms.size());
            out.terms.push_back(std::move(t.s));
            out.terms.push_back(std::move(t.p));
            out.terms.push_back(std::move(t.o));
            indexes.push_back({at, at + 1, at + 2});
        }
    }
    if (reply.labels) {
        out.labelled = true;
        for (auto& names : *reply.labels) {
            auto& views = out.labels.emplace_back();
            views.reserve(names.size());
            for (auto& name : names)
                views.push_back(JsonText{out.owned.emplace_back(std::move(name))});
        }
    }
    return out;
}

}  // namespace

base::Result<TriplesBatchTerms> decode_triples_batch_terms(std::string_view text) {
    TriplesBatchTerms out;
    if (BatchTermsReader(out).read(text)) return out;
    auto decoded = decode_text<TriplesBatchResponse>(text);
    if (!decoded) return std::move(decoded).error();
    return batch_terms_of(std::move(decoded).value());
}

}  // namespace glassbox::schema
