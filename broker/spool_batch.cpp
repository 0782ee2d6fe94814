// The requests with EXPLAINs in the spool's open batch, kept until the batch commits or fails.
#include "broker/detail/spool_batch.hpp"

#include "broker/detail/request_table.hpp"

namespace glassbox::broker::detail {

void SpoolBatch::note(Request& request) {
    if (request.batch_slot != 0) return;
    requests_.push_back(BatchRequest{request.id,
                                     request.client_kind,
                                     request.packed,
                                     request.explain_partials,
                                     request.client,
                                     request.request_id,
                                     request.service,
                                     {}});
    request.batch_slot = requests_.size();
}

void SpoolBatch::keep_sessions(Request& request) {
    if (request.batch_slot == 0) return;
    requests_[request.batch_slot - 1].sessions = std::move(request.sessions);
    request.sessions.clear();
    request.batch_slot = 0;
}

std::vector<BatchRequest> SpoolBatch::take(RequestTable& requests) {
    auto batch = std::move(requests_);
    requests_.clear();
    for (const auto& entry : batch) {
        if (Request* request = requests.find(entry.request)) request->batch_slot = 0;
    }
    return batch;
}

}  // namespace glassbox::broker::detail
