// The explain topic's ledger: connections by fd from the monitor, names from ZAP, and the
// subscriptions each named subscriber holds against the per-subscriber and total bounds.
#include "broker/topic_ledger.hpp"

#include <charconv>

namespace glassbox::broker {

namespace {

constexpr std::string_view kNamePrefix = "sub-";

// The monitor mark of a name written by admit(): "sub-<serial>-<events seen>".
std::optional<std::uint64_t> mark_of(std::string_view name) {
    if (name.substr(0, kNamePrefix.size()) != kNamePrefix) return std::nullopt;
    const auto dash = name.rfind('-');
    if (dash < kNamePrefix.size()) return std::nullopt;
    std::uint64_t mark = 0;
    const char* first = name.data() + dash + 1;
    const char* last = name.data() + name.size();
    const auto [end, error] = std::from_chars(first, last, mark);
    if (error != std::errc{} || end != last || first == last) return std::nullopt;
    return mark;
}

}  // namespace

std::string_view to_string(TopicBound bound) noexcept {
    switch (bound) {
        case TopicBound::kSubscriberCount:
            return "subscriber_subscriptions";
        case TopicBound::kSubscriberBytes:
            return "subscriber_bytes";
        case TopicBound::kTotalCount:
            return "total_subscriptions";
        case TopicBound::kTotalBytes:
            return "total_bytes";
    }
    return "unknown";
}

void TopicLedger::accepted(int fd) {
    const std::uint64_t index = events_++;
    auto& connection = connections_[fd];
    // A close the monitor never reported cannot happen (its DISCONNECTED precedes the fd's
    // reuse); should it, the old owner is gone all the same.
    if (!connection.owner.empty()) forget(connection.owner);
    connection = Connection{index, {}};
}

std::optional<TopicLedger::Departed> TopicLedger::disconnected(int fd) {
    ++events_;
    const auto found = connections_.find(fd);
    if (found == connections_.end()) return std::nullopt;
    std::optional<Departed> departed;
    if (!found->second.owner.empty()) {
        const auto subscriber = subscribers_.find(found->second.owner);
        if (subscriber != subscribers_.end()) {
            departed = Departed{subscriber->first, subscriber->second.topics.size(),
                                subscriber->second.dropped};
        }
        forget(found->second.owner);
    }
    connections_.erase(found);
    return departed;
}

std::string TopicLedger::admit() {
    return std::string{kNamePrefix} + std::to_string(++admitted_) + "-" + std::to_string(events_);
}

TopicLedger::Subscriber* TopicLedger::bind(std::string_view name, int fd) {
    if (const auto found = subscribers_.find(std::string{name}); found != subscribers_.end()) {
        return found->second.fd == fd ? &found->second : nullptr;
    }
    const auto mark = mark_of(name);
    if (!mark) return nullptr;
    const auto connection = connections_.find(fd);
    // Closed since (no entry), or accepted again after the name was given: the named
    // connection is gone. An owner already bound is another name: not this connection.
    if (connection == connections_.end() || connection->second.accepted_at >= *mark ||
        !connection->second.owner.empty()) {
        return nullptr;
    }
    connection->second.owner.assign(name);
    auto& subscriber = subscribers_[std::string{name}];
    subscriber.fd = fd;
    return &subscriber;
}

TopicLedger::Outcome TopicLedger::subscribe(std::string_view name, int fd, std::string_view topic) {
    if (!mark_of(name)) return {Verdict::kUnnamed, {}};
    Subscriber* subscriber = bind(name, fd);
    if (subscriber == nullptr || subscriber->dropped) return {Verdict::kIgnored, {}};
    const std::string key{topic};
    if (subscriber->topics.count(key) != 0) return {Verdict::kRepeated, {}};
    std::optional<TopicBound> passed;
    if (subscriber->topics.size() + 1 > limits_.per_subscriber) {
        passed = TopicBound::kSubscriberCount;
    } else if (subscriber->bytes + topic.size() > limits_.bytes_per_subscriber) {
        passed = TopicBound::kSubscriberBytes;
    } else if (subscriptions_ + 1 > limits_.total) {
        passed = TopicBound::kTotalCount;
    } else if (bytes_ + topic.size() > limits_.total_bytes) {
        passed = TopicBound::kTotalBytes;
    }
    if (passed) {
        // What it holds stays counted until its connection closes: libzmq holds it till then.
        subscriber->dropped = true;
        ++dropped_;
        return {Verdict::kOverLimit, *passed};
    }
    subscriber->topics.insert(key);
    subscriber->bytes += topic.size();
    ++subscriptions_;
    bytes_ += topic.size();
    return {Verdict::kCounted, {}};
}

void TopicLedger::unsubscribe(std::string_view name, std::string_view topic) {
    const auto found = subscribers_.find(std::string{name});
    if (found == subscribers_.end()) return;
    Subscriber& subscriber = found->second;
    if (subscriber.topics.erase(std::string{topic}) == 0) return;
    subscriber.bytes -= topic.size();
    --subscriptions_;
    bytes_ -= topic.size();
}

bool TopicLedger::holds(std::string_view name, int fd) const {
    const auto connection = connections_.find(fd);
    return connection != connections_.end() && connection->second.owner == name;
}

std::size_t TopicLedger::subscriptions_of(std::string_view name) const {
    const auto found = subscribers_.find(std::string{name});
    return found == subscribers_.end() ? 0 : found->second.topics.size();
}

void TopicLedger::forget(const std::string& name) {
    const auto found = subscribers_.find(name);
    if (found == subscribers_.end()) return;
    subscriptions_ -= found->second.topics.size();
    bytes_ -= found->second.bytes;
    subscribers_.erase(found);
}

}  // namespace glassbox::broker
