// Citation marker stripping: held-back scanning of streamed text, claim spans in code points.
#include "workers/rag/citation_markers.hpp"

#include <algorithm>

namespace glassbox::rag {
namespace {

constexpr std::size_t kMaxIdLength = 32;
// A bracket group longer than this is text, whatever follows (bounds the held-back text).
constexpr std::size_t kMaxGroupLength = 200;

bool is_id_char(char c) noexcept {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

bool is_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool is_continuation(char c) noexcept { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

}  // namespace

bool is_marker_id(std::string_view id) noexcept {
    if (id.empty() || id.size() > kMaxIdLength) return false;
    return std::all_of(id.begin(), id.end(), is_id_char);
}

MarkerStripper::MarkerStripper(std::function<bool(std::string_view)> known, std::string id_prefix)
    : known_(std::move(known)), id_prefix_(std::move(id_prefix)) {}

MarkerStripper::Scan MarkerStripper::scan_group(std::size_t at, std::size_t& end,
                                                std::vector<std::string>& ids) const {
    const std::size_t close = pending_.find(']', at + 1);
    const std::size_t limit = std::min(pending_.size(), at + 1 + kMaxGroupLength);
    if (close == std::string::npos || close >= limit) {
        if (pending_.size() - at > kMaxGroupLength) return Scan::kText;
        for (std::size_t i = at + 1; i < pending_.size(); ++i) {
            const char c = pending_[i];
            if (!is_id_char(c) && c != ',' && c != ' ') return Scan::kText;
        }
        return Scan::kNeedMore;
    }
    std::string_view content(pending_.data() + at + 1, close - at - 1);
    std::vector<std::string> found;
    while (true) {
        const auto comma = content.find(',');
        const auto token = trim(content.substr(0, comma));
        if (!is_marker_id(token)) return Scan::kText;
        const bool ours =
            token.size() > id_prefix_.size() && token.starts_with(id_prefix_) &&
            std::all_of(token.begin() + static_cast<std::ptrdiff_t>(id_prefix_.size()), token.end(),
                        [](char c) { return c >= '0' && c <= '9'; });
        if (!ours && !(known_ && known_(token))) return Scan::kText;
        found.emplace_back(token);
        if (comma == std::string_view::npos) break;
        content.remove_prefix(comma + 1);
    }
    end = close + 1;
    ids = std::move(found);
    return Scan::kMarker;
}

void MarkerStripper::emit(std::string_view piece) {
    for (char c : piece) {
        const bool starts_char = !is_continuation(c);
        if (starts_char) {
            const char previous = text_.empty() ? '\0' : text_.back();
            if (c == '\n' ||
                (is_space(c) && (previous == '.' || previous == '!' || previous == '?'))) {
                sentence_start_ = code_points_ + 1;
            }
            if (!is_space(c)) last_was_marker_ = false;
            ++code_points_;
        }
        text_.push_back(c);
    }
}

void MarkerStripper::cite(const std::vector<std::string>& ids) {
    std::vector<std::string> cited;
    for (const auto& id : ids) {
        if (known_ && known_(id) && std::find(cited.begin(), cited.end(), id) == cited.end())
            cited.push_back(id);
    }
    if (!last_was_marker_) {
        // A new claim: from the later of the last claim's end and this sentence's start, leading
        // whitespace skipped.
        std::uint64_t start = std::max(claim_floor_, sentence_start_);
        std::uint64_t index = 0;
        for (std::size_t byte = 0; byte < text_.size(); ++byte) {
            if (is_continuation(text_[byte])) continue;
            if (index >= start && !is_space(text_[byte])) break;
            ++index;
            if (index > start) start = index;
        }
        claim_start_ = std::min(start, code_points_);
        claim_floor_ = code_points_;
        last_was_marker_ = true;
    }
    if (cited.empty() || claim_start_ >= code_points_) return;
    if (!citations_.empty() && citations_.back().start == claim_start_ &&
        citations_.back().end == code_points_) {
        auto& merged = citations_.back().ids;
        for (auto& id : cited) {
            if (std::find(merged.begin(), merged.end(), id) == merged.end())
                merged.push_back(std::move(id));
        }
        return;
    }
    citations_.push_back(CitedSpan{claim_start_, code_points_, std::move(cited)});
}

std::string MarkerStripper::drain(bool final) {
    const std::size_t before = text_.size();
    std::size_t i = 0;
    std::size_t held = std::string::npos;  // where undecided text starts
    // The group at `at`: a marker is cited and skipped (i moves past it); else the scan says
    // whether more text could make it one.
    const auto take_marker = [&](std::size_t at) {
        std::size_t end = 0;
        std::vector<std::string> ids;
        const auto scan = scan_group(at, end, ids);
        if (scan == Scan::kMarker) {
            cite(ids);
            i = end;
        }
        return scan;
    };
    while (i < pending_.size()) {
        const char c = pending_[i];
        if (is_space(c)) {
            std::size_t j = i;
            while (j < pending_.size() && is_space(pending_[j])) ++j;
            if (j == pending_.size()) {
                if (!final)
                    held = i;
                else
                    emit(std::string_view(pending_).substr(i));
                break;
            }
            if (pending_[j] == '[') {
                const auto scan = take_marker(j);
                if (scan == Scan::kMarker) continue;
                if (scan == Scan::kNeedMore && !final) {
                    held = i;
                    break;
                }
            }
            emit(std::string_view(pending_).substr(i, j - i));
            i = j;
            if (pending_[i] == '[') {
                emit("[");
                ++i;
            }
            continue;
        }
        if (c == '[') {
            const auto scan = take_marker(i);
            if (scan == Scan::kMarker) continue;
            if (scan == Scan::kNeedMore && !final) {
                held = i;
                break;
            }
            emit("[");
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j < pending_.size() && !is_space(pending_[j]) && pending_[j] != '[') ++j;
        emit(std::string_view(pending_).substr(i, j - i));
        i = j;
    }
    pending_ = held == std::string::npos ? std::string() : pending_.substr(held);
    return text_.substr(before);
}

std::string MarkerStripper::feed(std::string_view piece) {
    pending_.append(piece);
    return drain(false);
}

std::string MarkerStripper::finish() { return drain(true); }

StrippedAnswer strip_markers(std::string_view text,
                             const std::function<bool(std::string_view)>& known,
                             std::string_view id_prefix) {
    MarkerStripper stripper(known, std::string(id_prefix));
    stripper.feed(text);
    stripper.finish();
    return {stripper.text(), stripper.citations()};
}

}  // namespace glassbox::rag
