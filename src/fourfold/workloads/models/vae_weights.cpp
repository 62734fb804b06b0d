#include "fourfold/workloads/models/vae_weights.hpp"

#include "fourfold/core/error.hpp"
#include "fourfold/core/files.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/workloads/inputs.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace fourfold::workloads::models {
namespace {

namespace fs = std::filesystem;

std::string shape_str(const std::vector<std::int64_t>& s) {
    std::vector<std::string> parts;
    parts.reserve(s.size());
    for (const auto v : s)
        parts.push_back(std::to_string(v));
    return "[" + join(parts, ", ") + "]";
}

double fan_in_std(std::int64_t fan_in) {
    return 1.0 / std::sqrt(static_cast<double>(fan_in));
}

constexpr double k_bias_std = 0.02;

struct spec_builder {
    std::vector<vae_tensor_spec> out;

    void conv(const std::string& p, std::int64_t out_c, std::int64_t in_c,
              const std::vector<std::int64_t>& kernel, double scale = 1.0) {
        std::vector<std::int64_t> shape{out_c, in_c};
        std::int64_t fan = in_c;
        for (const auto k : kernel) {
            shape.push_back(k);
            fan *= k;
        }
        out.push_back({p + ".weight", shape, scale * fan_in_std(fan)});
        out.push_back({p + ".bias", {out_c}, k_bias_std});
    }
    void norm(const std::string& p, std::int64_t c, bool images) {
        out.push_back(
            {p + ".gamma",
             images ? std::vector<std::int64_t>{c, 1, 1} : std::vector<std::int64_t>{c, 1, 1, 1},
             0});
    }
    void resblock(const std::string& p, std::int64_t in_c, std::int64_t out_c) {
        norm(p + ".norm1", in_c, false);
        conv(p + ".conv1", out_c, in_c, {3, 3, 3});
        norm(p + ".norm2", out_c, false);
        conv(p + ".conv2", out_c, out_c, {3, 3, 3}, 0.5);
        if (in_c != out_c)
            conv(p + ".conv_shortcut", out_c, in_c, {1, 1, 1});
    }
    void attention(const std::string& p, std::int64_t c) {
        norm(p + ".norm", c, true);
        conv(p + ".to_qkv", 3 * c, c, {1, 1});
        conv(p + ".proj", c, c, {1, 1}, 0.5);
    }
    void mid(const std::string& p, std::int64_t c) {
        resblock(p + ".resnets.0", c, c);
        attention(p + ".attentions.0", c);
        resblock(p + ".resnets.1", c, c);
    }
};

void validate_floating(const checkpoint& ck, const std::string& name,
                       const safetensors_entry& entry) {
    static const std::set<std::string> floating{"F16", "BF16", "F32", "F64"};
    if (!floating.count(entry.dtype))
        throw bad_input(fmt::format("{}: tensor {} has dtype {}; VAE weights must be F16, BF16, "
                                    "F32 or F64",
                                    ck.directory().string(), name, entry.dtype));
}

} // namespace

std::vector<std::int64_t> vae_config::decoder_dims() const {
    std::vector<std::int64_t> d{base_dim * dim_mult.back()};
    for (auto it = dim_mult.rbegin(); it != dim_mult.rend(); ++it)
        d.push_back(base_dim * *it);
    return d;
}

std::vector<std::int64_t> vae_config::encoder_dims() const {
    std::vector<std::int64_t> d{base_dim};
    for (const auto m : dim_mult)
        d.push_back(base_dim * m);
    return d;
}

std::int64_t vae_config::spatial_factor() const {
    return std::int64_t{1} << (dim_mult.size() - 1);
}

std::int64_t vae_config::temporal_factor() const {
    std::int64_t f = 1;
    for (const bool t : temporal_downsample)
        f *= t ? 2 : 1;
    return f;
}

std::int64_t vae_config::output_frames(std::int64_t latent_frames) const {
    return 1 + temporal_factor() * (latent_frames - 1);
}

std::int64_t vae_config::decode_pad_calls(std::int64_t latent_frames) const {
    const auto d = decoder_dims();
    const auto stages = static_cast<std::int64_t>(dim_mult.size());
    std::int64_t per_frame = 1 + 4 + 1; // conv_in, the middle block's two residual blocks, conv_out
    std::int64_t time_convs = 0;
    for (std::int64_t i = 0; i < stages; ++i) {
        auto in = i > 0 ? d[static_cast<std::size_t>(i)] / 2 : d[0];
        const auto out = d[static_cast<std::size_t>(i + 1)];
        for (std::int64_t j = 0; j <= num_res_blocks; ++j) {
            per_frame += 2 + (in != out ? 1 : 0);
            in = out;
        }
        // the upsamplers, reversed from the encoder's temporal downsampling
        const bool up = i != stages - 1;
        if (up && temporal_downsample[static_cast<std::size_t>(stages - 2 - i)])
            ++time_convs;
    }
    return 1 + latent_frames * per_frame + (latent_frames - 1) * time_convs;
}

std::int64_t vae_config::encode_pad_calls() const {
    const auto d = encoder_dims();
    const auto stages = static_cast<std::int64_t>(dim_mult.size());
    std::int64_t n = 1 + 4 + 1 + 1; // conv_in, the middle block, conv_out, quant_conv
    for (std::int64_t i = 0; i < stages; ++i) {
        auto in = d[static_cast<std::size_t>(i)];
        const auto out = d[static_cast<std::size_t>(i + 1)];
        for (std::int64_t j = 0; j < num_res_blocks; ++j) {
            n += 2 + (in != out ? 1 : 0);
            in = out;
        }
        if (i != stages - 1)
            n += 1; // the downsampler's (0, 1, 0, 1) zero pad
    }
    return n;
}

std::int64_t vae_config::decoder_params() const {
    std::int64_t n = 0;
    for (const auto& s : vae_expected_tensors(*this, vae_parts::decoder)) {
        std::int64_t e = 1;
        for (const auto v : s.shape)
            e *= v;
        n += e;
    }
    return n;
}

std::int64_t vae_config::encoder_params() const {
    std::int64_t all = 0;
    for (const auto& s : vae_expected_tensors(*this, vae_parts::both)) {
        std::int64_t e = 1;
        for (const auto v : s.shape)
            e *= v;
        all += e;
    }
    return all - decoder_params();
}

void vae_config::validate() const {
    auto bad = [&](const std::string& what) {
        throw bad_input(fmt::format("VAE config {}: {}", name, what));
    };
    if (base_dim < 1 || base_dim > 4096)
        bad(fmt::format("base_dim {} is out of range; valid: 1..4096", base_dim));
    if (z_dim < 1 || z_dim > 1024)
        bad(fmt::format("z_dim {} is out of range; valid: 1..1024", z_dim));
    if (num_res_blocks < 1 || num_res_blocks > 16)
        bad(fmt::format("num_res_blocks {} is out of range; valid: 1..16", num_res_blocks));
    if (dim_mult.size() < 2 || dim_mult.size() > 6)
        bad(fmt::format("dim_mult has {} entries; valid: 2..6", dim_mult.size()));
    for (const auto m : dim_mult)
        if (m < 1 || m > 64)
            bad(fmt::format("dim_mult holds {}; valid entries: 1..64", m));
    for (std::size_t i = 1; i + 1 < dim_mult.size(); ++i)
        if ((base_dim * dim_mult[dim_mult.size() - 1 - i]) % 2 != 0)
            bad("an upsampler halves an odd channel count; base_dim x dim_mult must be even");
    if (temporal_downsample.size() + 1 != dim_mult.size())
        bad(fmt::format("temperal_downsample has {} entries; dim_mult's {} stages need {}",
                        temporal_downsample.size(), dim_mult.size(), dim_mult.size() - 1));
}

json vae_config::to_json() const {
    return json{{"name", name},
                {"base_dim", base_dim},
                {"z_dim", z_dim},
                {"num_res_blocks", num_res_blocks},
                {"dim_mult", dim_mult},
                {"temperal_downsample", temporal_downsample},
                {"spatial_factor", spatial_factor()},
                {"temporal_factor", temporal_factor()},
                {"decoder_params", decoder_params()},
                {"encoder_params", encoder_params()}};
}

std::vector<std::string> vae_preset_names() {
    return {"wan2.1", "tiny"};
}

std::optional<vae_config> find_vae_preset(const std::string& name) {
    if (name == "wan2.1")
        return vae_config{};
    if (name == "tiny") {
        vae_config c;
        c.name = "tiny";
        c.base_dim = 16;
        return c;
    }
    return std::nullopt;
}

vae_source resolve_vae(const std::string& text) {
    if (auto p = find_vae_preset(text))
        return {*p, std::nullopt, false};
    if (!is_directory(text))
        throw bad_input(fmt::format("model '{}' is neither a VAE preset nor a directory; valid "
                                    "presets: {} (or a diffusers AutoencoderKLWan directory with "
                                    "config.json and *.safetensors)",
                                    text, join(vae_preset_names(), ", ")));
    const fs::path dir(text);
    const auto config_path = dir / "config.json";
    std::ifstream in(config_path, std::ios::binary);
    if (!in)
        throw bad_input(fmt::format("VAE directory {} has no readable config.json (diffusers' "
                                    "AutoencoderKLWan layout: config.json beside "
                                    "diffusion_pytorch_model.safetensors)",
                                    text));
    std::stringstream buffer;
    buffer << in.rdbuf();
    json j;
    try {
        j = json::parse(buffer.str());
    } catch (const json::exception& e) {
        throw bad_input(fmt::format("{}: not valid JSON ({})", config_path.string(), e.what()));
    }
    if (!j.is_object())
        throw bad_input(fmt::format("{}: not a JSON object", config_path.string()));
    vae_config c;
    c.name = text;
    auto int_of = [&](const char* key, std::int64_t& into) {
        if (!j.contains(key))
            return;
        if (!j[key].is_number_integer())
            throw bad_input(fmt::format("{}: {} is {}, not an integer", config_path.string(), key,
                                        j[key].dump()));
        into = j[key].get<std::int64_t>();
    };
    int_of("base_dim", c.base_dim);
    int_of("z_dim", c.z_dim);
    int_of("num_res_blocks", c.num_res_blocks);
    if (j.contains("dim_mult")) {
        c.dim_mult.clear();
        if (!j["dim_mult"].is_array())
            throw bad_input(fmt::format("{}: dim_mult is not a list", config_path.string()));
        for (const auto& v : j["dim_mult"]) {
            if (!v.is_number_integer())
                throw bad_input(fmt::format("{}: dim_mult holds {}, not an integer",
                                            config_path.string(), v.dump()));
            c.dim_mult.push_back(v.get<std::int64_t>());
        }
    }
    if (j.contains("temperal_downsample")) {
        c.temporal_downsample.clear();
        if (!j["temperal_downsample"].is_array())
            throw bad_input(
                fmt::format("{}: temperal_downsample is not a list", config_path.string()));
        for (const auto& v : j["temperal_downsample"]) {
            if (!v.is_boolean())
                throw bad_input(fmt::format("{}: temperal_downsample holds {}, not true/false",
                                            config_path.string(), v.dump()));
            c.temporal_downsample.push_back(v.get<bool>());
        }
    }
    if (j.value("is_residual", false))
        throw bad_input(fmt::format("{}: is_residual is true (Wan 2.2's VAE, with patchified "
                                    "input and residual up/down blocks); fourfold's VAE is Wan "
                                    "2.1's (is_residual false)",
                                    config_path.string()));
    if (j.contains("attn_scales") && j["attn_scales"].is_array() && !j["attn_scales"].empty())
        throw bad_input(fmt::format("{}: attn_scales is {}; fourfold's VAE has attention in the "
                                    "middle blocks only (attn_scales [])",
                                    config_path.string(), j["attn_scales"].dump()));
    c.validate();
    vae_source out{c, dir, false};
    for (const auto& name : list_directory(text))
        if (fs::path(name).extension() == ".safetensors")
            out.has_weights = true;
    return out;
}

std::vector<vae_tensor_spec> vae_expected_tensors(const vae_config& c, vae_parts parts) {
    spec_builder b;
    const auto z = c.z_dim;
    const auto stages = static_cast<std::int64_t>(c.dim_mult.size());
    if (parts == vae_parts::both) {
        const auto d = c.encoder_dims();
        b.conv("encoder.conv_in", d[0], 3, {3, 3, 3});
        std::int64_t idx = 0;
        for (std::int64_t i = 0; i < stages; ++i) {
            auto in = d[static_cast<std::size_t>(i)];
            const auto out = d[static_cast<std::size_t>(i + 1)];
            for (std::int64_t r = 0; r < c.num_res_blocks; ++r) {
                b.resblock(fmt::format("encoder.down_blocks.{}", idx++), in, out);
                in = out;
            }
            if (i != stages - 1) {
                const auto p = fmt::format("encoder.down_blocks.{}", idx++);
                b.conv(p + ".resample.1", out, out, {3, 3});
                if (c.temporal_downsample[static_cast<std::size_t>(i)])
                    b.conv(p + ".time_conv", out, out, {3, 1, 1});
            }
        }
        b.mid("encoder.mid_block", d.back());
        b.norm("encoder.norm_out", d.back(), false);
        b.conv("encoder.conv_out", 2 * z, d.back(), {3, 3, 3}, 0.5);
        b.conv("quant_conv", 2 * z, 2 * z, {1, 1, 1});
    }
    const auto d = c.decoder_dims();
    b.conv("post_quant_conv", z, z, {1, 1, 1});
    b.conv("decoder.conv_in", d[0], z, {3, 3, 3});
    b.mid("decoder.mid_block", d[0]);
    for (std::int64_t i = 0; i < stages; ++i) {
        auto in = i > 0 ? d[static_cast<std::size_t>(i)] / 2 : d[0];
        const auto out = d[static_cast<std::size_t>(i + 1)];
        for (std::int64_t j = 0; j <= c.num_res_blocks; ++j) {
            b.resblock(fmt::format("decoder.up_blocks.{}.resnets.{}", i, j), in, out);
            in = out;
        }
        if (i != stages - 1) {
            const auto p = fmt::format("decoder.up_blocks.{}.upsamplers.0", i);
            b.conv(p + ".resample.1", out / 2, out, {3, 3});
            if (c.temporal_downsample[static_cast<std::size_t>(stages - 2 - i)])
                b.conv(p + ".time_conv", 2 * out, out, {3, 1, 1});
        }
    }
    b.norm("decoder.norm_out", d.back(), false);
    b.conv("decoder.conv_out", 3, d.back(), {3, 3, 3}, 0.5);
    return b.out;
}

const at::Tensor& vae_weights::at(const std::string& name) const {
    const auto it = tensors.find(name);
    if (it == tensors.end())
        throw std::logic_error("VAE weights hold no tensor " + name);
    return it->second;
}

c10::ScalarType vae_weights::dtype() const {
    return tensors.begin()->second.scalar_type();
}

c10::Device vae_weights::device() const {
    return tensors.begin()->second.device();
}

std::int64_t vae_weights::bytes() const {
    std::int64_t n = 0;
    for (const auto& [name, t] : tensors)
        n += t.numel() * static_cast<std::int64_t>(t.element_size());
    return n;
}

vae_weights vae_weights::to(c10::Device device, c10::ScalarType type) const {
    vae_weights w;
    w.config = config;
    w.parts = parts;
    w.source = source;
    for (const auto& [name, t] : tensors)
        w.tensors.emplace(name, t.to(device, type).contiguous());
    return w;
}

vae_weights random_vae_weights(const vae_config& c, vae_parts parts, c10::ScalarType type,
                               c10::Device device, std::uint64_t seed) {
    c.validate();
    vae_weights w;
    w.config = c;
    w.parts = parts;
    std::uint64_t k = 0;
    const auto f32 = at::TensorOptions().dtype(at::kFloat);
    for (const auto& s : vae_expected_tensors(c, parts)) {
        at::Tensor t;
        if (s.stdev == 0) {
            t = at::ones(s.shape, f32);
        } else {
            auto gen = at::detail::createCPUGenerator(sub_seed(seed, k));
            t = at::randn(s.shape, gen, f32);
            t.mul_(s.stdev);
        }
        ++k;
        w.tensors.emplace(s.name, t.to(device, type));
    }
    w.source = fmt::format("random, seed {} (normal(0, 1/sqrt(fan_in)) convs, documented in "
                           "docs/performance.md)",
                           seed);
    return w;
}

void check_vae_checkpoint(const vae_config& c, vae_parts parts, const checkpoint& ck) {
    for (const auto& s : vae_expected_tensors(c, parts)) {
        if (!ck.contains(s.name))
            throw bad_input(
                fmt::format("{}: the checkpoint has no tensor {} (shape {}), which the {} of a "
                            "diffusers AutoencoderKLWan with this config.json needs",
                            ck.directory().string(), s.name, shape_str(s.shape),
                            parts == vae_parts::both ? "encoder and decoder" : "decoder"));
        const auto& e = ck.entry(s.name);
        if (e.shape != s.shape)
            throw bad_input(fmt::format("{}: tensor {} has shape {}; the config needs {}",
                                        ck.directory().string(), s.name, shape_str(e.shape),
                                        shape_str(s.shape)));
        validate_floating(ck, s.name, e);
    }
}

vae_weights load_vae_weights(const vae_config& c, vae_parts parts, const checkpoint& ck,
                             c10::ScalarType type, c10::Device device) {
    check_vae_checkpoint(c, parts, ck);
    vae_weights w;
    w.config = c;
    w.parts = parts;
    std::set<std::string> dtypes;
    for (const auto& s : vae_expected_tensors(c, parts)) {
        dtypes.insert(ck.entry(s.name).dtype);
        w.tensors.emplace(s.name, ck.read(s.name).to(device, type).contiguous());
    }
    w.source = fmt::format("checkpoint {} (stored as {}), converted to the job dtype",
                           ck.directory().string(),
                           join(std::vector<std::string>(dtypes.begin(), dtypes.end()), ", "));
    return w;
}

} // namespace fourfold::workloads::models
