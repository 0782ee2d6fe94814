// What the query service's unit tests share: looking into a stream's explain messages and
// triples and its FINAL.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "schema/messages.hpp"
#include "schema/term.hpp"
#include "tests/support/rag_cluster.hpp"

namespace glassbox::query::testing {

inline std::vector<schema::Term> objects(const std::vector<schema::Triple>& triples,
                                         const std::string& s, std::string_view p) {
    std::vector<schema::Term> out;
    for (const auto& t : triples) {
        if (t.s == schema::iri(s) && t.p == schema::iri(p)) out.push_back(t.o);
    }
    return out;
}

inline bool has(const std::vector<schema::Triple>& triples, const std::string& s,
                std::string_view p, const schema::Term& o) {
    for (const auto& found : objects(triples, s, p)) {
        if (found == o) return true;
    }
    return false;
}

// Every explain message of the stream: the query's own (PARTIAL explain) and its engines'
// (forwarded as PARTIAL data with message_type explain), decoded, in arrival order.
struct Messages {
    std::vector<schema::ExplainMessage> own;
    std::vector<schema::ExplainMessage> forwarded;
    std::vector<schema::Triple> all;
};

inline Messages messages(const std::vector<rag::testing::StreamReply>& replies) {
    Messages out;
    for (const auto& r : replies) {
        const bool own = r.kind == bus::ReplyKind::kExplain;
        const bool forwarded =
            r.kind == bus::ReplyKind::kData && r.body.value("message_type", "") == "explain";
        if (!own && !forwarded) continue;
        auto m = schema::decode<schema::ExplainMessage>(r.body);
        EXPECT_TRUE(m.ok()) << r.body.dump();
        if (!m) continue;
        out.all.insert(out.all.end(), m->explain_triples.begin(), m->explain_triples.end());
        (own ? out.own : out.forwarded).push_back(std::move(m).value());
    }
    return out;
}

// The stream's FINAL body (a failure is reported, and the last reply's body returned).
inline const nlohmann::json& final_of(const std::vector<rag::testing::StreamReply>& replies) {
    EXPECT_EQ(replies.back().kind, bus::ReplyKind::kFinal)
        << (replies.back().error ? replies.back().error->describe() : replies.back().body.dump());
    return replies.back().body;
}

}  // namespace glassbox::query::testing
