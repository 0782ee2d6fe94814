// The row loops every statement type shares (each, first, collect), written once over a
// statement's step() and row(): SQLite's storage::Statement and the backend-neutral
// storage::sql::Statement both take them.
#pragma once

#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace glassbox::storage {

namespace detail {
template <typename T>
struct IsResult : std::false_type {};
template <typename T>
struct IsResult<base::Result<T>> : std::true_type {
    using Value = T;
};
}  // namespace detail

// Derived has `base::Result<bool> step()` (true: a row is ready) and `RowT row() const`.
template <typename Derived, typename RowT>
class RowLoops {
public:
    // fn(row) for every row; fn returns void, bool (false stops), base::Result<void> or
    // base::Result<bool> (an error stops and is returned).
    template <typename Fn>
    base::Result<void> each(Fn&& fn) {
        using Returned = std::invoke_result_t<Fn&, const RowT&>;
        for (;;) {
            auto stepped = self().step();
            if (!stepped) return std::move(stepped).error();
            if (!*stepped) return {};
            if constexpr (std::is_void_v<Returned>) {
                fn(self().row());
            } else if constexpr (std::is_same_v<Returned, bool>) {
                if (!fn(self().row())) return {};
            } else if constexpr (std::is_same_v<Returned, base::Result<bool>>) {
                auto more = fn(self().row());
                if (!more) return std::move(more).error();
                if (!*more) return {};
            } else {
                static_assert(
                    std::is_same_v<Returned, base::Result<void>>,
                    "each: fn returns void, bool, base::Result<void> or base::Result<bool>");
                if (auto r = fn(self().row()); !r) return r.error();
            }
        }
    }

    // fn(first row), or nullopt when there is none; a fn returning base::Result<T> gives
    // base::Result<std::optional<T>>.
    template <typename Fn>
    auto first(Fn&& fn) {
        using Returned = std::invoke_result_t<Fn&, const RowT&>;
        if constexpr (detail::IsResult<Returned>::value) {
            using Out = base::Result<std::optional<typename detail::IsResult<Returned>::Value>>;
            auto stepped = self().step();
            if (!stepped) return Out(std::move(stepped).error());
            if (!*stepped) return Out(std::nullopt);
            auto value = fn(self().row());
            if (!value) return Out(std::move(value).error());
            return Out(std::optional(std::move(value).value()));
        } else {
            using Out = base::Result<std::optional<Returned>>;
            auto stepped = self().step();
            if (!stepped) return Out(std::move(stepped).error());
            if (!*stepped) return Out(std::nullopt);
            return Out(std::optional<Returned>(fn(self().row())));
        }
    }

    // fn(row) of every row, in order.
    template <typename Fn>
    auto collect(Fn&& fn) -> base::Result<std::vector<std::invoke_result_t<Fn&, const RowT&>>> {
        std::vector<std::invoke_result_t<Fn&, const RowT&>> out;
        if (auto r = each([&](const RowT& row) { out.push_back(fn(row)); }); !r) return r.error();
        return out;
    }

private:
    Derived& self() { return static_cast<Derived&>(*this); }
};

}  // namespace glassbox::storage
