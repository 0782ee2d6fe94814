// The services the broker knows: made on first use, collected when idle and never registered,
// and the spool folder's list of those registered before a restart (restart_grace).
#include "broker/detail/service_directory.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "base/log.hpp"

namespace glassbox::broker::detail {

namespace {

// The spool directory's list of services registered there, one name a line (restart_grace).
constexpr const char* kServicesFile = "services";
constexpr std::size_t kMaxKnownServices = 4096;

}  // namespace

Service& ServiceDirectory::service_for(std::string_view name) {
    auto found = services_.find(name);
    if (found == services_.end()) {
        auto service =
            std::make_unique<Service>(std::string{name}, config_.max_queue, config_.overflow);
        service->topic = std::string{proto::kExplainTopicPrefix} + std::string{name};
        found = services_.emplace(std::string{name}, std::move(service)).first;
    }
    return *found->second;
}

Service* ServiceDirectory::find(std::string_view name) {
    const auto found = services_.find(name);
    return found == services_.end() ? nullptr : found->second.get();
}

void ServiceDirectory::collect_later(const Service& service) {
    if (!service.registered) to_collect_.push_back(service.name);
}

void ServiceDirectory::collect() {
    for (const auto& name : to_collect_) {
        const auto found = services_.find(name);
        if (found == services_.end()) continue;
        const Service& service = *found->second;
        if (!service.registered && service.workers == 0 && service.queue.empty()) {
            services_.erase(found);
        }
    }
    to_collect_.clear();
}

void ServiceDirectory::load_known() {
    if (config_.spool_path.empty()) return;
    std::ifstream in(config_.spool_path + "/" + kServicesFile);
    std::string name;
    while (known_.size() < kMaxKnownServices && std::getline(in, name)) {
        if (proto::is_valid_service_name(name)) known_.insert(name);
    }
    if (!known_.empty()) {
        log_->info("event=known_services count={} grace_ms={}", known_.size(),
                   config_.restart_grace.count());
    }
}

void ServiceDirectory::remember(const Service& service) {
    if (config_.spool_path.empty() || known_.count(service.name) != 0 ||
        known_.size() >= kMaxKnownServices) {
        return;
    }
    known_.insert(service.name);
    // Rewritten whole and renamed into place: a crash leaves the old list or the new one.
    std::string text;
    for (const auto& name : known_) text.append(name).push_back('\n');
    const std::string path = config_.spool_path + "/" + kServicesFile;
    const std::string temporary = path + ".tmp";
    const int fd =
        ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool written = fd >= 0;
    if (written) {
        written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
        written = ::close(fd) == 0 && written;
    }
    if (!written || std::rename(temporary.c_str(), path.c_str()) != 0) {
        // Only restart_grace depends on it: the service is unknown for a while after a restart.
        log_->warn("event=services_list_not_written path={} error=\"{}\"", path,
                   std::strerror(errno));
        ::unlink(temporary.c_str());
    }
}

TimePoint ServiceDirectory::grace_end(const Service& service) const {
    if (known_.count(service.name) == 0) return TimePoint::min();
    return started_ + config_.restart_grace;
}

}  // namespace glassbox::broker::detail
