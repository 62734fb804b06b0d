#include "fourfold/compare/pairing.hpp"

#include "fourfold/core/error.hpp"
#include "fourfold/core/text.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <set>
#include <tuple>

namespace fourfold::compare {
namespace {

using records = std::vector<store::stored_record>;
using index_list = std::vector<std::size_t>;

std::string timing_of(const store::stored_record& r) {
    const auto& f = r.rec.figures;
    if (r.rec.which != ledger::op_time || !f.is_object())
        return {};
    return fmt::format("{}/{}", f.value("mode", "?"), f.value("cache", "?"));
}

// The job fields a pair differs in, by their --allow-diff names.
std::vector<std::string> job_diffs_of(const store::stored_record& a,
                                      const store::stored_record& b) {
    std::vector<std::string> out;
    if (a.rec.job.device != b.rec.job.device)
        out.emplace_back("device");
    if (a.rec.job.dtype != b.rec.job.dtype)
        out.emplace_back("dtype");
    // a record can run in another mode than the run's setting (a variant that cannot be
    // captured in a graph): that is a timing difference of this pair alone
    if (a.rec.status == record_status::ok && b.rec.status == record_status::ok &&
        timing_of(a) != timing_of(b))
        out.emplace_back("timing");
    return out;
}

// Pairs in the order the baseline's records were written (the run's own order: job by job,
// variants together), unpaired records by side, then in their run's order.
void sort_for_reading(pairing& p) {
    auto order = [](const store::stored_record& r) {
        return std::pair{static_cast<int>(r.rec.which), r.id};
    };
    std::stable_sort(p.pairs.begin(), p.pairs.end(),
                     [&](const record_pair& x, const record_pair& y) {
                         return std::pair{order(x.a), x.b.id} < std::pair{order(y.a), y.b.id};
                     });
    std::stable_sort(p.unpaired.begin(), p.unpaired.end(),
                     [&](const unpaired_record& x, const unpaired_record& y) {
                         return std::pair{x.side, order(x.rec)} < std::pair{y.side, order(y.rec)};
                     });
}

} // namespace

std::size_t pairing::by_key() const {
    std::size_t n = 0;
    for (const auto& p : pairs)
        n += p.by_case ? 0 : 1;
    return n;
}

std::size_t pairing::by_case() const {
    return pairs.size() - by_key();
}

pairing pair_runs(const records& a, const records& b) {
    pairing out;
    using key_t = std::pair<ledger, std::string>;
    std::map<key_t, index_list> ka, kb;
    for (std::size_t i = 0; i < a.size(); ++i)
        ka[{a[i].rec.which, a[i].rec.job.key()}].push_back(i);
    for (std::size_t i = 0; i < b.size(); ++i)
        kb[{b[i].rec.which, b[i].rec.job.key()}].push_back(i);
    std::vector<bool> used_a(a.size()), used_b(b.size());
    for (const auto& [key, ia] : ka) {
        const auto it = kb.find(key);
        if (it == kb.end())
            continue;
        const auto& ib = it->second;
        out.pairs.push_back({a[ia[0]], b[ib[0]], false, job_diffs_of(a[ia[0]], b[ib[0]])});
        used_a[ia[0]] = used_b[ib[0]] = true;
        for (std::size_t k = 1; k < ia.size(); ++k) {
            out.unpaired.push_back(
                {'A', a[ia[k]], "the run holds this job twice; the first was paired"});
            used_a[ia[k]] = true;
        }
        for (std::size_t k = 1; k < ib.size(); ++k) {
            out.unpaired.push_back(
                {'B', b[ib[k]], "the run holds this job twice; the first was paired"});
            used_b[ib[k]] = true;
        }
    }
    // What is left pairs by case + variant when exactly one record remains on each side.
    using case_t = std::tuple<ledger, std::string, std::string>;
    std::map<case_t, index_list> ca, cb;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!used_a[i])
            ca[{a[i].rec.which, a[i].rec.job.case_key(), a[i].rec.job.variant}].push_back(i);
    for (std::size_t i = 0; i < b.size(); ++i)
        if (!used_b[i])
            cb[{b[i].rec.which, b[i].rec.job.case_key(), b[i].rec.job.variant}].push_back(i);
    for (const auto& [key, ia] : ca) {
        const auto it = cb.find(key);
        if (it == cb.end()) {
            for (const auto i : ia)
                out.unpaired.push_back({'A', a[i],
                                        "run B has no record of this ledger, workload, "
                                        "params and variant"});
            continue;
        }
        const auto& ib = it->second;
        if (ia.size() == 1 && ib.size() == 1) {
            out.pairs.push_back({a[ia[0]], b[ib[0]], true, job_diffs_of(a[ia[0]], b[ib[0]])});
            used_b[ib[0]] = true;
            continue;
        }
        const auto why = fmt::format("ambiguous: {} record(s) in A and {} in B share ledger, "
                                     "workload, params and variant but differ in device or dtype",
                                     ia.size(), ib.size());
        for (const auto i : ia)
            out.unpaired.push_back({'A', a[i], why});
        for (const auto i : ib) {
            out.unpaired.push_back({'B', b[i], why});
            used_b[i] = true;
        }
    }
    for (std::size_t i = 0; i < b.size(); ++i)
        if (!used_b[i])
            out.unpaired.push_back({'B', b[i],
                                    "run A has no record of this ledger, workload, "
                                    "params and variant"});
    sort_for_reading(out);
    return out;
}

pairing pair_variants(const records& run, const std::string& baseline_variant) {
    std::set<std::string> variants;
    for (const auto& r : run)
        variants.insert(r.rec.job.variant);
    if (!variants.count(baseline_variant))
        throw bad_input(fmt::format("--baseline-variant '{}' is not a variant of any record in "
                                    "this run; variants there: {}",
                                    baseline_variant,
                                    variants.empty()
                                        ? std::string("none")
                                        : join({variants.begin(), variants.end()}, ", ")));
    // the job without its variant: ledger, workload + params, device, dtype
    using job_t = std::tuple<ledger, std::string, std::string, std::string>;
    std::map<job_t, index_list> jobs;
    for (std::size_t i = 0; i < run.size(); ++i) {
        const auto& j = run[i].rec.job;
        jobs[{run[i].rec.which, j.case_key(), j.device, j.dtype}].push_back(i);
    }
    pairing out;
    for (const auto& [job, members] : jobs) {
        std::vector<std::size_t> base;
        for (const auto i : members)
            if (run[i].rec.job.variant == baseline_variant)
                base.push_back(i);
        for (const auto i : members) {
            if (run[i].rec.job.variant == baseline_variant) {
                if (i != (base.empty() ? i : base[0]))
                    out.unpaired.push_back(
                        {'A', run[i], "the run holds this job twice; the first was the baseline"});
                continue;
            }
            if (base.empty()) {
                out.unpaired.push_back({'B', run[i],
                                        fmt::format("no '{}' record of this job to "
                                                    "compare with",
                                                    baseline_variant)});
                continue;
            }
            out.pairs.push_back({run[base[0]], run[i], false, job_diffs_of(run[base[0]], run[i])});
        }
    }
    sort_for_reading(out);
    return out;
}

} // namespace fourfold::compare
