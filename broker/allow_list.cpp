// Reading the folder of allowed keys, and noticing when it changes.
#include "broker/detail/allow_list.hpp"

#include <algorithm>
#include <system_error>

namespace glassbox::broker {

namespace {

bool is_public_certificate(const std::filesystem::directory_entry& entry) {
    std::error_code error;
    return entry.is_regular_file(error) && entry.path().extension() == ".key";
}

}  // namespace

base::Result<std::string> AllowList::signature() const {
    std::error_code error;
    std::vector<std::string> parts;
    std::filesystem::directory_iterator it{folder_, error};
    if (error) {
        return base::make_error(
            base::ErrorType::kInvalidRequest,
            "cannot read the allowed keys folder " + folder_.string() + ": " + error.message());
    }
    for (const auto& entry : it) {
        if (!is_public_certificate(entry)) continue;
        std::error_code stat_error;
        const auto size = entry.file_size(stat_error);
        const auto modified = entry.last_write_time(stat_error);
        parts.push_back(entry.path().filename().string() + ":" + std::to_string(size) + ":" +
                        std::to_string(modified.time_since_epoch().count()));
    }
    std::sort(parts.begin(), parts.end());
    std::string text;
    for (const auto& part : parts) text += part + "\n";
    return text;
}

base::Result<void> AllowList::load() {
    auto seen = signature();
    if (!seen) return seen.error();
    decltype(peers_) peers;
    std::vector<std::string> problems;
    std::error_code error;
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator{folder_, error}) {
        if (is_public_certificate(entry)) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
        auto certificate = bus::read_public_certificate(file);
        if (!certificate) {
            problems.push_back(certificate.error().message);
            continue;
        }
        auto& value = certificate.value();
        AllowedPeer peer{value.name.empty() ? file.stem().string() : value.name, value.public_key,
                         std::move(value.roles)};
        if (const auto [it, added] = peers.emplace(peer.public_key, peer); !added) {
            problems.push_back(file.string() + ": the same key as '" + it->second.name + "'");
        }
    }
    peers_ = std::move(peers);
    problems_ = std::move(problems);
    signature_ = std::move(seen).value();
    return {};
}

base::Result<bool> AllowList::reload_if_changed() {
    auto seen = signature();
    if (!seen) return seen.error();
    if (seen.value() == signature_) return false;
    if (auto loaded = load(); !loaded) return loaded.error();
    return true;
}

const AllowedPeer* AllowList::find(std::string_view public_key) const {
    const auto found = peers_.find(public_key);
    return found == peers_.end() ? nullptr : &found->second;
}

}  // namespace glassbox::broker
