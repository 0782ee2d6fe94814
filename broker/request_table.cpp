// The broker's live requests, found by id and by their client's request id, and their timers.
#include "broker/detail/request_table.hpp"

namespace glassbox::broker::detail {

Request& RequestTable::insert(std::unique_ptr<Request> owned) {
    Request& request = *owned;
    requests_.emplace(request.id, std::move(owned));
    if (request.client_kind == ClientKind::kGb) {
        by_client_.emplace(client_key(request.client, request.request_id, key_), request.id);
    }
    return request;
}

Request* RequestTable::find(std::uint64_t id) {
    const auto found = requests_.find(id);
    return found == requests_.end() ? nullptr : found->second.get();
}

Request* RequestTable::find_client(std::string_view identity, std::string_view request_id) {
    const auto found = by_client_.find(client_key(identity, request_id, key_));
    if (found == by_client_.end()) return nullptr;
    return find(found->second);
}

void RequestTable::forget_client(const Request& request) {
    const auto found = by_client_.find(client_key(request.client, request.request_id, key_));
    if (found != by_client_.end()) by_client_.erase(found);
}

void RequestTable::erase(const Request& request) { requests_.erase(request.id); }

std::vector<Request*> RequestTable::of_client(std::string_view identity) {
    std::vector<Request*> found;
    for (auto& [id, request] : requests_) {
        if (!request->abandoned && request->client == identity) found.push_back(request.get());
    }
    return found;
}

void RequestTable::schedule(Request& request, TimePoint at) {
    request.timer_at = at;
    timers_.push(TimerEntry{at, request.id});
}

std::optional<TimePoint> RequestTable::next_timer() const {
    if (timers_.empty()) return std::nullopt;
    return timers_.top().at;
}

Request* RequestTable::next_due(TimePoint now) {
    while (!timers_.empty() && timers_.top().at <= now) {
        const TimerEntry entry = timers_.top();
        timers_.pop();
        Request* request = find(entry.request);
        if (request == nullptr || request->abandoned || request->timer_at != entry.at) continue;
        return request;
    }
    return nullptr;
}

void RequestTable::compact_timers() {
    if (timers_.size() <= 2 * requests_.size() + 4096) return;
    std::vector<TimerEntry> live;
    live.reserve(requests_.size());
    for (const auto& [id, request] : requests_) {
        if (!request->abandoned) live.push_back(TimerEntry{request->timer_at, id});
    }
    timers_ = decltype(timers_){std::greater<>{}, std::move(live)};
}

}  // namespace glassbox::broker::detail
