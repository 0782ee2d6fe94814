// Finding an embedded viewer file and its content type.
#include "gateway/web_assets.hpp"

namespace glassbox::gateway {

std::optional<WebAsset> find_web_asset(std::string_view name) {
    for (const auto& asset : web_assets())
        if (asset.name == name) return asset;
    return std::nullopt;
}

std::string_view content_type_for(std::string_view name) noexcept {
    const auto dot = name.rfind('.');
    const std::string_view ext =
        dot == std::string_view::npos ? std::string_view() : name.substr(dot + 1);
    if (ext == "html") return "text/html; charset=utf-8";
    if (ext == "js") return "text/javascript; charset=utf-8";
    if (ext == "css") return "text/css; charset=utf-8";
    if (ext == "svg") return "image/svg+xml";
    if (ext == "json") return "application/json";
    if (ext == "png") return "image/png";
    if (ext == "ico") return "image/x-icon";
    if (ext == "txt") return "text/plain; charset=utf-8";
    return "application/octet-stream";
}

}  // namespace glassbox::gateway
