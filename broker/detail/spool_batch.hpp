// Internal to the broker: the requests whose EXPLAINs wait in the spool's open batch (§2.3), as
// the end of the batch needs them if it cannot be written.
#pragma once

#include <cstddef>
#include <vector>

#include "broker/detail/broker_records.hpp"

namespace glassbox::broker::detail {

class RequestTable;

class SpoolBatch {
public:
    // A request with an EXPLAIN appended in this batch (noted once).
    void note(Request& request);
    // The request ends within the batch: its sessions are kept for their traces' ends.
    void keep_sessions(Request& request);
    // The batch is over (committed or failed): its requests, which no longer wait for it.
    std::vector<BatchRequest> take(RequestTable& requests);
    std::size_t size() const noexcept { return requests_.size(); }

private:
    std::vector<BatchRequest> requests_;
};

}  // namespace glassbox::broker::detail
