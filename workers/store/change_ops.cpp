// The store's knowledge-change operations: decoding, the change under the collection's lock,
// the vector indexes, the trace and the reply.
#include "workers/store/change_ops.hpp"

#include <chrono>

#include "base/log.hpp"
#include "schema/messages.hpp"
#include "workers/store/change_trace.hpp"

namespace glassbox::store {

using base::ErrorType;
using base::make_error;
using base::Result;
using nlohmann::json;
using SystemClock = std::chrono::system_clock;

namespace {

// The "actor" of a change body: who asked (optional).
Result<std::string> actor_of(const json& body) {
    const auto field = body.find("actor");
    if (field == body.end() || field->is_null()) return std::string();
    if (!field->is_string()) return make_error(ErrorType::kDecodeError, "actor: expected a string");
    return field->get<std::string>();
}

// After the commit: the removed entities and chunks leave the vector indexes (rows and the
// hnswlib graph), under the collection's lock. A failure leaves a vector whose entity has no
// fact (or whose chunk is gone): searches then find nothing to answer from, so it is logged.
void drop_vectors(KnowledgeBase& kb, const KnowledgeChange& change) {
    if (!change.orphaned_entities.empty()) {
        if (auto r = kb.entity_vectors().remove(change.orphaned_entities); !r) {
            base::component_logger("store")->warn(
                "event=change_vectors_failed kind=entity "
                "error=\"{}\"",
                r.error().message);
        }
    }
    if (!change.removed_chunks.empty()) {
        if (auto r = kb.chunk_vectors().remove(change.removed_chunks); !r) {
            base::component_logger("store")->warn(
                "event=change_vectors_failed kind=chunk "
                "error=\"{}\"",
                r.error().message);
        }
    }
}

// The trace goes out once the change committed; a trace that cannot be sent is the request's
// error (the change itself stays: it committed).
Result<void> record(runtime::RequestContext& ctx, const KnowledgeChange& change,
                    ChangeContext context) {
    context.ended = SystemClock::now();
    if (auto sent = send_change_trace(ctx, change, context); !sent) {
        return make_error(sent.error().type, "the change was made but its trace was not sent: " +
                                                 sent.error().message);
    }
    return {};
}

Result<KnowledgeChange> forget(KnowledgeBase& kb, std::string_view op,
                               const schema::ForgetRequest& q) {
    if (op == kOpForgetSource) return kb.graph().forget_source(q.source);
    if (op == kOpForgetDocument) return kb.graph().forget_document(q.document);
    return kb.graph().forget_fact(*q.fact);
}

Result<void> check_forget(std::string_view op, const schema::ForgetRequest& q) {
    if (op == kOpForgetSource && q.source.empty())
        return make_error(ErrorType::kInvalidRequest, "forget-source needs \"source\" (its URI)");
    if (op == kOpForgetDocument && q.document.empty()) {
        return make_error(ErrorType::kInvalidRequest,
                          "forget-document needs \"document\" (its URI)");
    }
    if (op == kOpForgetFact && !q.fact) {
        return make_error(ErrorType::kInvalidRequest,
                          "forget-fact needs \"fact\" ({\"s\", \"p\", \"o\", \"g\"?})");
    }
    return {};
}

}  // namespace

bool is_forget_op(std::string_view op) noexcept {
    return op == kOpForgetSource || op == kOpForgetFact || op == kOpForgetDocument;
}

Result<json> run_forget(runtime::RequestContext& ctx, KnowledgeBases& bases, std::string_view op,
                        const json& body) {
    auto q = schema::decode<schema::ForgetRequest>(body);
    if (!q) return std::move(q).error();
    if (auto r = check_forget(op, *q); !r) return r.error();
    auto kb = bases.get(q->collection, false);
    if (!kb) return std::move(kb).error();
    ChangeContext context;
    context.collection = (*kb)->collection();
    context.actor = q->actor;
    context.started = SystemClock::now();
    Result<KnowledgeChange> change = make_error(ErrorType::kInternal, "no change");
    {
        auto held = (*kb)->lock();
        if (!held) return std::move(held).error();
        change = forget(**kb, op, *q);
        if (!change) return std::move(change).error();
        drop_vectors(**kb, *change);
    }
    const std::string subject = op == kOpForgetSource     ? q->source
                                : op == kOpForgetDocument ? q->document
                                                          : fact_text(*q->fact);
    context.description = change_description(*change, subject);
    if (auto r = record(ctx, *change, context); !r) return r.error();
    return schema::encode(change_summary(*change, context.collection, ctx.run().question()));
}

Result<json> run_replacing_commit(runtime::RequestContext& ctx, KnowledgeBases& bases,
                                  const std::string& collection, const std::string& load,
                                  const json& body) {
    auto actor = actor_of(body);
    if (!actor) return std::move(actor).error();
    auto kb = bases.get(collection, true);
    if (!kb) return std::move(kb).error();
    ChangeContext context;
    context.collection = (*kb)->collection();
    context.actor = *actor;
    context.started = SystemClock::now();
    KnowledgeChange change;
    Result<InsertCounts> counts = InsertCounts{};
    {
        auto held = (*kb)->lock();
        if (!held) return std::move(held).error();
        counts = (*kb)->graph().commit_staged(load, change);
        if (!counts) return std::move(counts).error();
        drop_vectors(**kb, change);
    }
    json reply = schema::encode(schema::LoadTriplesResponse{
        counts->added + counts->already_present, counts->added, counts->already_present});
    if (change.used.empty()) return reply;  // nothing was staged under this load
    context.description = change_description(change);
    if (auto r = record(ctx, change, context); !r) return r.error();
    reply["change"] =
        schema::encode(change_summary(change, context.collection, ctx.run().question()));
    return reply;
}

}  // namespace glassbox::store
