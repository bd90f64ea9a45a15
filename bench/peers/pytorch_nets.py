# The bundled networks (models/, docs/ARCHITECTURE.md) in PyTorch, layer for layer as frugal's
# models/ records them, so frugal can be timed and weighed beside PyTorch on the same nets.
# RevNets are memcnn's own. `python3 pytorch_nets.py` checks every parameter count against
# frugal's.
import importlib.util

import torch
import torch.nn as nn
import torch.utils.checkpoint

# Trainable parameters of frugal's builders (models/*.cpp, networks.md).
FRUGAL_PARAMS = {
    "resnet110": 1_734_858,
    "alexnet": 60_522_856,
    "vgg-a": 132_863_336,
    "googlenet": 19_124_528,
    "revnet38": 573_994,
    "revnet110": 1_854_890,
    "densenet121": 7_978_856,
}


def conv_relu(cin, cout, k, stride=1, pad=None):
    return [nn.Conv2d(cin, cout, k, stride, k // 2 if pad is None else pad), nn.ReLU(inplace=True)]


def threshold():
    # Torch7's Threshold(0, 1e-6): negatives become 1e-6, not in place.
    return nn.Threshold(0.0, 1e-6)


class AlexNet(nn.Module):
    """Two identical towers, concatenated (256 x 6 x 6), then three linears."""

    def __init__(self, dropout=True, classes=1000):
        super().__init__()

        def tower():
            return nn.Sequential(
                *conv_relu(3, 48, 11, 4, 2), nn.MaxPool2d(3, 2),
                *conv_relu(48, 128, 5, 1, 2), nn.MaxPool2d(3, 2),
                *conv_relu(128, 192, 3), *conv_relu(192, 192, 3), *conv_relu(192, 128, 3),
                nn.MaxPool2d(3, 2))

        self.towers = nn.ModuleList([tower(), tower()])
        drop = [nn.Dropout(0.5)] if dropout else []
        self.classifier = nn.Sequential(
            nn.Flatten(), *drop, nn.Linear(9216, 4096), threshold(), *drop,
            nn.Linear(4096, 4096), threshold(), nn.Linear(4096, classes), nn.LogSoftmax(1))

    def forward(self, x):
        return self.classifier(torch.cat([t(x) for t in self.towers], 1))


def vgg_a(dropout=True, classes=1000):
    layers, cin = [], 3
    for c in [64, 0, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0]:
        if c == 0:
            layers.append(nn.MaxPool2d(2, 2))
        else:
            layers += conv_relu(cin, c, 3)
            cin = c
    drop = [nn.Dropout(0.5)] if dropout else []
    return nn.Sequential(
        *layers, nn.Flatten(), nn.Linear(25088, 4096), threshold(), *drop,
        nn.Linear(4096, 4096), threshold(), *drop, nn.Linear(4096, classes), nn.LogSoftmax(1))


class Inception(nn.Module):
    """Concat of 1x1; 1x1 -> 3x3; 1x1 -> 3x3 -> 3x3; pool 3 s1 p1 (-> 1x1 proj)."""

    def __init__(self, cin, c1, r3, c3, r33, c33, pool, proj):
        super().__init__()
        self.b1 = nn.Sequential(*conv_relu(cin, c1, 1)) if c1 else None
        self.b3 = nn.Sequential(*conv_relu(cin, r3, 1), *conv_relu(r3, c3, 3))
        self.b33 = nn.Sequential(*conv_relu(cin, r33, 1), *conv_relu(r33, c33, 3),
                                 *conv_relu(c33, c33, 3))
        # Torch's zero padding + pool: average counts the padding (divisor 9); max pools
        # read ReLU outputs (>= 0), so padding with zeros or -inf gives the same maximum.
        p = (nn.MaxPool2d(3, 1, 1, ceil_mode=True) if pool == "max"
             else nn.AvgPool2d(3, 1, 1, ceil_mode=True, count_include_pad=True))
        self.bp = nn.Sequential(p, *conv_relu(cin, proj, 1)) if proj else p

    def forward(self, x):
        branches = [self.b1(x)] if self.b1 is not None else []
        return torch.cat(branches + [self.b3(x), self.b33(x), self.bp(x)], 1)


class GoogLeNet(nn.Module):
    """optnet's Inception variant; output (N, 2 x classes): main and auxiliary heads."""

    def __init__(self, classes=1000):
        super().__init__()
        self.trunk = nn.Sequential(
            *conv_relu(3, 64, 7, 2, 3), nn.MaxPool2d(3, 2, ceil_mode=True),
            *conv_relu(64, 64, 1), *conv_relu(64, 192, 3), nn.MaxPool2d(3, 2, ceil_mode=True),
            Inception(192, 64, 64, 64, 64, 96, "avg", 32),
            Inception(256, 64, 64, 96, 64, 96, "avg", 64),
            Inception(320, 0, 128, 160, 64, 96, "max", 0),
            nn.Conv2d(576, 576, 2, 2),
            Inception(576, 224, 64, 96, 96, 128, "avg", 128),
            Inception(576, 192, 96, 128, 96, 128, "avg", 128),
            Inception(576, 160, 128, 160, 128, 160, "avg", 96),
            Inception(576, 96, 128, 192, 160, 192, "avg", 96))
        self.main = nn.Sequential(
            Inception(576, 0, 128, 192, 192, 256, "max", 0),
            nn.Conv2d(1024, 1024, 2, 2),
            Inception(1024, 352, 192, 320, 160, 224, "avg", 128),
            Inception(1024, 352, 192, 320, 192, 224, "max", 128),
            nn.AvgPool2d(7, 1), nn.Flatten(), nn.Linear(1024, classes), nn.LogSoftmax(1))
        self.aux = nn.Sequential(
            nn.AvgPool2d(5, 3, ceil_mode=True), nn.Conv2d(576, 128, 1), nn.Flatten(),
            nn.Linear(2048, 768), nn.ReLU(inplace=True), nn.Linear(768, classes),
            nn.LogSoftmax(1))

    def forward(self, x):
        x = self.trunk(x)
        return torch.cat([self.main(x), self.aux(x)], 1)


class BasicBlock(nn.Module):
    """relu(bn(conv(relu(bn(conv(x))))) + shortcut); shortcut B: 1x1 conv + BN on change."""

    def __init__(self, cin, cout, stride, bn):
        super().__init__()
        norm = nn.BatchNorm2d if bn else (lambda c: nn.Identity())
        self.branch = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1), norm(cout), nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, 1, 1), norm(cout))
        self.shortcut = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride), norm(cout))
                         if cin != cout or stride != 1 else nn.Identity())

    def forward(self, x):
        return torch.relu_(self.branch(x) + self.shortcut(x))


class ResNetCifar(nn.Module):
    """Stem, 3n basic blocks, head. With `segments` > 0 the blocks run through
    torch.utils.checkpoint.checkpoint_sequential (every segment but the last recomputed)."""

    def __init__(self, depth=110, bn=True, classes=10, segments=0):
        super().__init__()
        n = (depth - 2) // 6
        norm = [nn.BatchNorm2d(16)] if bn else []
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1), *norm, nn.ReLU(inplace=True))
        blocks, cin = [], 16
        for s, width in enumerate([16, 32, 64]):
            for b in range(n):
                blocks.append(BasicBlock(cin, width, 2 if s > 0 and b == 0 else 1, bn))
                cin = width
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Sequential(nn.AvgPool2d(8, 1), nn.Flatten(), nn.Linear(64, classes))
        self.segments = segments

    def forward(self, x):
        x = self.stem(x)
        if self.segments > 0 and self.training:
            x = torch.utils.checkpoint.checkpoint_sequential(self.blocks, self.segments, x)
        else:
            x = self.blocks(x)
        return self.head(x)


def revnet(depth):
    """memcnn's own RevNet (reversible units free their inputs and rebuild them in backward),
    configured as memcnn's experiments.json builds revnet38 / revnet110. The first unit keeps
    its input: that is the stem's ReLU output, which ReLU's backward saved, and freeing it
    fails PyTorch 1.13's in-place check."""
    import memcnn.models.resnet as mr

    channels = {38: [32, 32, 64, 112], 110: [32, 32, 64, 128]}[depth]
    n = (depth - 2) // 12
    net = mr.ResNet(mr.RevBasicBlock, [n, n, n], num_classes=10, channels_per_layer=channels,
                    strides=[1, 1, 2, 2], init_max_pool=False, init_kernel_size=3,
                    batch_norm_fix=False)
    net.layer1[0].revblock.keep_input = True
    return net


# name -> (builder(dropout, batch_norm, segments), input C x H x W, classes, log-probabilities)
NETS = {
    "resnet110": (lambda d, bn, seg: ResNetCifar(110, bn, segments=seg), (3, 32, 32), 10, False),
    "alexnet": (lambda d, bn, seg: AlexNet(d), (3, 224, 224), 1000, True),
    "vgg-a": (lambda d, bn, seg: vgg_a(d), (3, 224, 224), 1000, True),
    "googlenet": (lambda d, bn, seg: GoogLeNet(), (3, 224, 224), 1000, True),
    "revnet38": (lambda d, bn, seg: revnet(38), (3, 32, 32), 10, False),
    "revnet110": (lambda d, bn, seg: revnet(110), (3, 32, 32), 10, False),
}


# torchvision's models as published (ImageNet: 3 x 224 x 224, 1000 classes), for the peers on
# real-world networks: frugal runs the same model through a training-mode ONNX export
# (export_torchvision.py). EfficientNet-B0, ConvNeXt-Tiny and Swin-T without stochastic depth,
# whose random skips a training-mode export cannot write; both sides then run the same network.
def torchvision_model(name):
    import torchvision
    skips = name.startswith(("efficientnet", "convnext"))
    kwargs = {"stochastic_depth_prob": 0.0} if skips else {}
    model = getattr(torchvision.models, name)(num_classes=1000, **kwargs)
    for m in model.modules():  # swin_t sets its own probability: its skips turned off here
        if type(m).__name__ == "StochasticDepth":
            m.p = 0.0
    return model


TORCHVISION = ["mobilenet_v2", "efficientnet_b0", "resnet18", "resnet50", "squeezenet1_1",
               "densenet121", "shufflenet_v2_x1_0", "convnext_tiny", "vit_b_16",
               "mobilenet_v3_large", "regnet_y_400mf", "resnext50_32x4d", "swin_t"]
for _name in TORCHVISION:
    NETS["tv-" + _name] = (lambda d, bn, seg, n=_name: torchvision_model(n), (3, 224, 224), 1000,
                           False)

# torchvision's video networks (Kinetics-400's 400 classes) on clips of 8 frames of 112 x 112:
# r3d_18's and mc3_18's 3x3x3 convolutions, R(2+1)D's factored ones (--set video).
def video_model(name):
    import torchvision

    return getattr(torchvision.models.video, name)(num_classes=400)


for _name in ("r3d_18", "mc3_18", "r2plus1d_18"):
    NETS["tv-" + _name] = (lambda d, bn, seg, n=_name: video_model(n), (3, 8, 112, 112), 400,
                           False)
# S3D's separable 3-D convolutions end in a (2, 7, 7) average pool: clips of 16 x 224 x 224.
NETS["tv-s3d"] = (lambda d, bn, seg: video_model("s3d"), (3, 16, 224, 224), 400, False)

# timm's models as users bring them (--set timm: `pip install --no-deps timm==0.9.16
# huggingface_hub safetensors` beside Debian's PyTorch; not a dependency of anything else):
# ViT-S/16, ResNet-50-D, NF-ResNet-26 (its weights standardized in the graph), Sequencer2d-S
# (LSTMs along rows and columns) and XCiT-nano (position features repeated per sample), without
# dropout or stochastic depth, whose random draws a training-mode export cannot write.
def timm_model(name):
    import timm
    return timm.create_model(name, pretrained=False, num_classes=1000, drop_rate=0.0,
                             drop_path_rate=0.0)


TIMM = ["vit_small_patch16_224", "resnet50d", "nf_resnet26", "sequencer2d_s",
        "xcit_nano_12_p16_224"]
for _name in TIMM:
    NETS["tm-" + _name] = (lambda d, bn, seg, n=_name: timm_model(n), (3, 224, 224), 1000, False)
# ResNet-18 with GroupNorm (32 groups) for BatchNorm, as GN-ResNets are built: its export
# reaches frugal as InstanceNormalization between Reshapes.
NETS["tv-resnet18_gn"] = (
    lambda d, bn, seg: __import__("torchvision").models.resnet18(
        num_classes=1000, norm_layer=lambda c: __import__("torch").nn.GroupNorm(32, c)),
    (3, 224, 224), 1000, False)
# frugal's bundled densenet121 is torchvision's layout: the two compared directly, and with
# torchvision's memory-efficient variant.
NETS["densenet121"] = (lambda d, bn, seg: torchvision_model("densenet121"), (3, 224, 224), 1000,
                       False)
# DenseNet-121 as torchvision's memory-efficient variant: each dense layer's concat, BN, ReLU
# and 1x1 convolution checkpointed (torch.utils.checkpoint), rebuilt in backward.
NETS["tv-densenet121-efficient"] = (
    lambda d, bn, seg: __import__("torchvision").models.densenet121(num_classes=1000,
                                                                    memory_efficient=True),
    (3, 224, 224), 1000, False)


class UNet(nn.Module):
    """A U-Net as PyTorch users write it: two 3x3 convolutions with BatchNorm and ReLU per
    level, max-pool down, a transposed convolution up, then a nearest upsampling and a 1x1
    convolution up, each upsampled map padded to its skip's size with F.pad (shape arithmetic in
    the export), skips joined by torch.cat, a 1x1 head over `classes`. Also the model of
    `frugal segment`'s documented run (scripts/onnx_fixtures.py --segmentation)."""

    def __init__(self, base=16, classes=4, channels=3):
        super().__init__()

        def block(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o),
                                 nn.ReLU(inplace=True), nn.Conv2d(o, o, 3, padding=1, bias=False),
                                 nn.BatchNorm2d(o), nn.ReLU(inplace=True))

        self.enc1, self.enc2 = block(channels, base), block(base, 2 * base)
        self.enc3 = block(2 * base, 4 * base)
        self.pool = nn.MaxPool2d(2)
        self.up2 = nn.ConvTranspose2d(4 * base, 2 * base, 2, stride=2)
        self.dec2 = block(4 * base, 2 * base)
        self.up1 = nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"),
                                 nn.Conv2d(2 * base, base, 1))
        self.dec1 = block(2 * base, base)
        self.head = nn.Conv2d(base, classes, 1)

    @staticmethod
    def fit(x, skip):  # pad x to skip's size (0 here, computed from shapes as usual)
        dy, dx = skip.size(2) - x.size(2), skip.size(3) - x.size(3)
        return nn.functional.pad(x, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        e3 = self.enc3(self.pool(e2))
        d2 = self.dec2(torch.cat([self.fit(self.up2(e3), e2), e2], 1))
        d1 = self.dec1(torch.cat([self.fit(self.up1(d2), e1), e1], 1))
        return self.head(d1)


# A segmentation peer (issue 17): the U-Net above at 3 x 128 x 128, 32 base channels, 4 classes
# per pixel (labels (N, H, W), the per-pixel cross-entropy), through a training-mode export.
NETS["tv-unet"] = (lambda d, bn, seg: UNet(base=32), (3, 128, 128), 4, False)


class UNet3d(nn.Module):
    """A 3-D U-Net as volumetric segmentation writes it (3-D U-Net, Cicek et al.): two 3x3x3
    convolutions with BatchNorm3d and ReLU per level, MaxPool3d(2) down, ConvTranspose3d(2,
    stride 2) up, skips joined by torch.cat, a 1x1x1 head over `classes`."""

    def __init__(self, base=16, classes=3, channels=1):
        super().__init__()

        def block(i, o):
            return nn.Sequential(nn.Conv3d(i, o, 3, padding=1, bias=False), nn.BatchNorm3d(o),
                                 nn.ReLU(inplace=True), nn.Conv3d(o, o, 3, padding=1, bias=False),
                                 nn.BatchNorm3d(o), nn.ReLU(inplace=True))

        self.enc1, self.enc2 = block(channels, base), block(base, 2 * base)
        self.enc3 = block(2 * base, 4 * base)
        self.pool = nn.MaxPool3d(2)
        self.up2 = nn.ConvTranspose3d(4 * base, 2 * base, 2, stride=2)
        self.dec2 = block(4 * base, 2 * base)
        self.up1 = nn.ConvTranspose3d(2 * base, base, 2, stride=2)
        self.dec1 = block(2 * base, base)
        self.head = nn.Conv3d(base, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        e3 = self.enc3(self.pool(e2))
        d2 = self.dec2(torch.cat([self.up2(e3), e2], 1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
        return self.head(d1)


# A volumetric segmentation peer (--set video): the 3-D U-Net above over 1 x 48 x 64 x 64
# volumes, 16 base channels, 3 classes per voxel (labels (N, D, H, W)).
NETS["tv-unet3d"] = (lambda d, bn, seg: UNet3d(), (1, 48, 64, 64), 3, False)


class DiffusionUNet(nn.Module):
    """A denoising diffusion U-Net as DDPM writes it (Ho et al.; the layout of the diffusers
    and guided-diffusion U-Nets): a sinusoidal embedding of the timestep t (N) through an MLP,
    residual blocks of GroupNorm(32), SiLU and 3x3 convolutions with the embedding added per
    channel, self-attention over the pixels of the 16 x 16 level, strided convolutions down,
    nearest upsampling and a convolution up, skips joined by torch.cat. Two inputs: images and
    timesteps."""

    def __init__(self, base=64, mults=(1, 2, 2), channels=3):
        super().__init__()
        import math
        half = base // 2
        self.freqs = [math.exp(-math.log(10000.0) * i / half) for i in range(half)]
        temb = 4 * base
        self.temb = nn.Sequential(nn.Linear(base, temb), nn.SiLU(), nn.Linear(temb, temb))
        self.inp = nn.Conv2d(channels, base, 3, padding=1)
        widths = [base * m for m in mults]
        self.down, self.downsample = nn.ModuleList(), nn.ModuleList()
        c, skips = base, [base]
        for i, w in enumerate(widths):
            self.down.append(nn.ModuleList([ResBlock(c, w, temb), ResBlock(w, w, temb)]))
            c = w
            skips += [w, w]
            if i + 1 < len(widths):
                self.downsample.append(nn.Conv2d(c, c, 3, stride=2, padding=1))
                skips.append(c)
        self.mid = nn.ModuleList([ResBlock(c, c, temb), Attention(c), ResBlock(c, c, temb)])
        self.up, self.upsample = nn.ModuleList(), nn.ModuleList()
        for i, w in reversed(list(enumerate(widths))):
            blocks = []
            for _ in range(3):  # each block joins the latest skip left
                blocks.append(ResBlock(c + skips.pop(), w, temb))
                c = w
            self.up.append(nn.ModuleList(blocks))
            if i > 0:
                self.upsample.append(nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"),
                                                   nn.Conv2d(c, c, 3, padding=1)))
        self.attn = Attention(widths[-1])
        self.out = nn.Sequential(nn.GroupNorm(32, c), nn.SiLU(),
                                 nn.Conv2d(c, channels, 3, padding=1))

    def forward(self, x, t):
        freqs = torch.tensor(self.freqs, dtype=x.dtype, device=x.device)
        a = t[:, None] * freqs[None]
        emb = self.temb(torch.cat([torch.sin(a), torch.cos(a)], dim=1))
        h = self.inp(x)
        hs = [h]
        for i, blocks in enumerate(self.down):
            for b in blocks:
                h = b(h, emb)
                hs.append(h)
            if i < len(self.downsample):
                h = self.downsample[i](h)
                hs.append(h)
        h = self.mid[2](self.mid[1](self.mid[0](h, emb)), emb)
        for i, blocks in enumerate(self.up):
            for b in blocks:
                h = b(torch.cat([h, hs.pop()], 1), emb)
            if i == 0:
                h = self.attn(h)
            if i < len(self.upsample):
                h = self.upsample[i](h)
        return self.out(h)


class ResBlock(nn.Module):
    def __init__(self, cin, cout, temb):
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(32, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.emb = nn.Linear(temb, cout)
        self.norm2, self.conv2 = nn.GroupNorm(32, cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, emb):
        h = self.conv1(nn.functional.silu(self.norm1(x)))
        h = h + self.emb(nn.functional.silu(emb))[:, :, None, None]
        h = self.conv2(nn.functional.silu(self.norm2(h)))
        return self.skip(x) + h


class Attention(nn.Module):
    """Single-head self-attention over the pixels, as DDPM's AttnBlock."""

    def __init__(self, c):
        super().__init__()
        self.norm, self.qkv = nn.GroupNorm(32, c), nn.Conv2d(c, 3 * c, 1)
        self.proj = nn.Conv2d(c, c, 1)

    def forward(self, x):
        n, c, hh, ww = x.shape
        q, k, v = self.qkv(self.norm(x)).reshape(n, 3, c, hh * ww).unbind(1)
        w = torch.softmax(torch.bmm(q.transpose(1, 2), k) * c ** -0.5, dim=2)
        h = torch.bmm(v, w.transpose(1, 2)).reshape(n, c, hh, ww)
        return x + self.proj(h)


# A diffusion peer (issue 17, models of several inputs): the U-Net above over 3 x 64 x 64 images
# and a timestep per image; 3 "classes" per pixel so both sides train it with the per-pixel
# cross-entropy (frugal's commands have no mean-squared head; the loss is a sliver of the step).
NETS["tv-ddpm-unet"] = (lambda d, bn, seg: DiffusionUNet(), (3, 64, 64), 3, False)
# Inception v3 with its auxiliary head, as it trains (a second output of the logits' shape;
# both sides sum the two heads' losses), at its 299 x 299.
NETS["tv-inception_v3_aux"] = (
    lambda d, bn, seg: __import__("torchvision").models.inception_v3(
        num_classes=1000, aux_logits=True, init_weights=True), (3, 299, 299), 1000, False)
# Inputs after the images: each one's sample shape and how a batch of it is drawn.
EXTRA_INPUTS = {"tv-ddpm-unet": [((), lambda n: torch.rand(n) * 1000)]}
# Segmentation models: each sample's labels (H, W), or (D, H, W).
LABEL_SHAPE = {"tv-unet": (128, 128), "tv-unet3d": (48, 64, 64), "tv-ddpm-unet": (64, 64)}


def build(name, dropout=True, batch_norm=True, segments=0):
    """(module, input shape C x H x W, classes, log_softmax_output)."""
    make, shape, classes, log_probs = NETS[name]
    return make(dropout, batch_norm, segments), shape, classes, log_probs


def count_params(module):
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


if __name__ == "__main__":
    ok = True
    for name, expected in FRUGAL_PARAMS.items():
        if name.startswith("revnet") and importlib.util.find_spec("memcnn") is None:
            print(f"{name:10s} skipped: memcnn is not installed")
            continue
        got = count_params(build(name, dropout=False)[0])
        ok &= got == expected
        same = "equal" if got == expected else "DIFFERENT"
        print(f"{name:10s} {got:>12,d}  frugal {expected:>12,d}  {same}")
    raise SystemExit(0 if ok else 1)
