"""CoreLM (Stylianou & Vlahavas 2021, papers/003): an Entity-Gating layer after the last
decoder block of a pretrained causal LM, fed by entity representations.

Written against what every Hugging Face `AutoModelForCausalLM` exposes: the final hidden
states of its base model (`model.base_model(...).last_hidden_state`, after the backbone's own
final norm: what its LM head reads) and its LM head (`get_output_embeddings()`). So the same
class wraps GPT-2, SmolLM2 (Llama) or any other causal LM. The paper's code is not public (none
found); the extracted text lost the bodies of Eq. 6-15, so the forms below follow the prose.

§3.2 entity representations. "The entity representations are initialized as a vector of
ones. [...] Initializing the entity representations this way introduces less noise during the
first occurrence of an entity mention." App. B: "The resulted entity representation were
created as an average of the hidden representation of all the entity mention in that entry
(Section 3.2)". App. A: "During Fine-Tuning, the entity representations are updated after
every training step" and "Our model has 132M parameters, a 6% increase, after the addition of
the Entity-Gating layer and the entity representations" -- GPT-2 small's 124.44M (the paper:
"124M") + this layer's 7.09M at d = 768 (`EntityGating(768, 12)`, counted in the tests) =
131.5M leaves no room for a per-entity table. So (default,
entity_vectors "mention_mean") an entity's vector at a token is the mean of the backbone's
final hidden states over that entity's earlier tokens, ones before its first token (§3.2's
initialisation; mention_mean "previous"), the same in training and at test time; the static
e_0 = ones marks tokens outside entities. Options: mention_mean "inclusive" (the token's own
state joins the mean: the old test-time rule) and entity_vectors "table" (the old training
rule: a trained parameter table, ones-initialised, one row per entity id).
  Scope (stated): the mean runs within one window (a training window, a scoring window); the
paper's "persistent set of entities [...] through out the whole discourse scope" would also
carry an entity from a document's earlier windows into its later ones, which is not done here.
  Modes of `entity_context`: "running_mean" (causal, above), "context_mean" (App. B's cloze
reading: every mention gets the mean over the mentions of the scored item's context, none of
the scored continuation -- leak-free only when just the continuation is scored), "table",
"none" (App. A's zero-shot: "we do not use any entity information").

§3.3 Entity-Gating, "the same design principles of the GPT2 Transformer decoder blocks":
- Eq. 13 Entity-Attention, the Query/Entity/Value scheme of Stylianou & Vlahavas 2020:
  softmax(Q E^T / sqrt(d_k)) V with Q = LN(H) W_Q, E = C W_E (entities take the keys' place),
  V = LN(H) W_V, multi-headed, causally masked (App. A: "masked multi-headed entity
  attention layer with 12 heads and a 10% dropout").
- Eq. 10-11: M = H + Attn, Z = M + FFN(LN(M)).
- Eq. 14-15: "the Gate layer combines the layer input with [Z] using the following gating
  mechanism before applying a layer normalization to the output [...] We use a gate flow rate
  to ensure that the entity information is considered by our final model. By definition, r=0
  results in no pass-through of information from the gate, r=1 results in completely
  dependent pass-through from the learned vector and r=0.5 enforces at least a fifty-fifty
  split of information." Read (default, gate "entity_floor", norm "after_gate"), the
  pass-through being the layer input H, as in a highway gate: H passes with
  p = r * sigmoid(w) (w the parameter vector), out =
  LN(p * H + (1 - p) * Z): r = 0 passes none of H, r = 1 leaves the split to w alone, r = 0.5
  keeps Z's share >= 50 % ("ensure that the entity information is considered"); 75 % at w = 0.
  Option (the old reading, gate "entity_ceiling", norm "entity_path"): g = r * sigmoid(w) is
  Z's share (<= r: 25 % at w = 0), out = (1 - g) * H + g * LN(Z), so that r = 0 gives
  exactly the backbone's logits.
Placement (stated): the layer sits after the backbone's final norm, where a generic wrapper
can reach it.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

EntityMode = Literal["table", "running_mean", "context_mean", "none"]
EntityVectors = Literal["mention_mean", "table"]
MentionMean = Literal["previous", "inclusive"]
GateForm = Literal["entity_floor", "entity_ceiling"]
GateNorm = Literal["after_gate", "entity_path"]


def hidden_size(config) -> int:
    return int(getattr(config, "hidden_size", None) or config.n_embd)


class EntityGating(nn.Module):
    """The Entity-Gating layer (papers/003 §3.3, Eq. 10-15; module docstring for the gate)."""

    def __init__(self, d_model: int, n_heads: int, *, flow_rate: float = 0.5,
                 dropout: float = 0.1, ffn_mult: int = 4, gate_init: float = 0.0,
                 gate: GateForm = "entity_floor", norm: GateNorm = "after_gate"):  # fmt: skip
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not a multiple of n_heads {n_heads}")
        if gate not in ("entity_floor", "entity_ceiling") or norm not in (
            "after_gate",
            "entity_path",
        ):
            raise ValueError(f"unknown gate {gate!r} or norm {norm!r}")
        self.n_heads, self.flow_rate, self.dropout = n_heads, float(flow_rate), dropout
        self.gate_form, self.norm = gate, norm
        self.ln_1 = nn.LayerNorm(d_model)
        self.query = nn.Linear(d_model, d_model)
        self.entity = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln_2 = nn.LayerNorm(d_model)
        self.ffn = nn.Sequential(
            nn.Linear(d_model, ffn_mult * d_model),
            nn.GELU(),
            nn.Linear(ffn_mult * d_model, d_model),
        )
        self.ln_out = nn.LayerNorm(d_model)
        self.gate = nn.Parameter(torch.full((d_model,), float(gate_init)))  # w of Eq. 14

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        return x.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)

    def entity_attention(self, x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        """Eq. 13: softmax(Q E^T / sqrt(d_k)) V per head, causal."""
        q, e, v = (
            self._heads(self.query(x)),
            self._heads(self.entity(context)),
            self._heads(self.value(x)),
        )
        p = self.dropout if self.training else 0.0
        out = F.scaled_dot_product_attention(q, e, v, is_causal=True, dropout_p=p)
        return self.proj(out.transpose(1, 2).reshape(x.shape))

    def entity_share(self) -> torch.Tensor:
        """The entity path's (Z's) share of the mix, per dimension (Eq. 14): 1 - r sigmoid(w)
        (entity_floor: >= 1 - r) or r sigmoid(w) (entity_ceiling: <= r)."""
        g = self.flow_rate * torch.sigmoid(self.gate)
        return 1 - g if self.gate_form == "entity_floor" else g

    def mix_parts(self, hidden: torch.Tensor, context: torch.Tensor
                  ) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        """Eq. 14's two terms before they are summed: the layer input's (1 - g) * H and the
        entity path's g * Z (g = entity_share; Z = LN(Z) under norm entity_path). Their norms
        measure how much each path carries (a learning curve's entity share)."""
        p = self.dropout if self.training else 0.0
        m = hidden + F.dropout(self.entity_attention(self.ln_1(hidden), context), p, self.training)
        z = m + F.dropout(self.ffn(self.ln_2(m)), p, self.training)  # Eq. 10-11
        g = self.entity_share().to(hidden.dtype)
        if self.norm == "entity_path":
            return (1 - g) * hidden, g * self.ln_out(z)  # the old reading
        return (1 - g) * hidden, g * z

    def forward(self, hidden: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        kept, entity = self.mix_parts(hidden, context)
        if self.norm == "entity_path":
            return kept + entity
        return self.ln_out(kept + entity)  # Eq. 15, then "a layer normalization"


def _group_keys(entity_ids: torch.Tensor) -> torch.Tensor:
    """One int64 key per (batch row, entity id): equal ids of different rows differ."""
    ids = entity_ids.long()
    width = int(ids.max()) + 1 if ids.numel() else 1
    rows = torch.arange(ids.shape[0], device=ids.device)[:, None]
    return rows * width + ids


def running_entity_sums(hidden: torch.Tensor, entity_ids: torch.Tensor
                        ) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """Per position, the sum (float64) and the number of the hidden states of the positions
    up to and including it that carry the same entity id in the same row (id 0 included: the
    caller masks it). One sort and one cumulative sum: no loop over entities."""
    b, t, d = hidden.shape
    keys = _group_keys(entity_ids)
    order = (keys * t + torch.arange(t, device=keys.device)).flatten().argsort()
    h = hidden.reshape(b * t, d).double()[order]
    k = keys.flatten()[order]
    csum = h.cumsum(0)
    idx = torch.arange(b * t, device=keys.device)
    start = torch.ones_like(k, dtype=torch.bool)
    start[1:] = k[1:] != k[:-1]
    first = torch.where(start, idx, torch.zeros_like(idx)).cummax(0).values
    before = torch.where((first > 0)[:, None], csum[(first - 1).clamp(min=0)], 0.0)
    sums, counts = torch.empty_like(csum), torch.empty_like(idx)
    sums[order], counts[order] = csum - before, idx - first + 1
    return sums.view(b, t, d), counts.view(b, t)


def running_entity_means(hidden: torch.Tensor, entity_ids: torch.Tensor, *,
                         inclusive: bool = True) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """(means, has): per entity token the mean of its entity's hidden states over the tokens
    before it (inclusive: up to and including it); has = at least one such token. Zeros where
    has is False. App. B's average, made causal."""
    sums, counts = running_entity_sums(hidden, entity_ids)
    if not inclusive:
        sums, counts = sums - hidden.double(), counts - 1
    has = (entity_ids > 0) & (counts > 0)
    means = sums / counts.clamp(min=1).unsqueeze(-1)
    return torch.where(has.unsqueeze(-1), means, 0.0).to(hidden.dtype), has


def context_entity_means(
    hidden: torch.Tensor, entity_ids: torch.Tensor, context_len: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(means, has): per entity token the mean of its entity's hidden states over the row's
    first context_len[row] positions (App. B: "an average of the hidden representation of
    all the entity mention in that entry, excluding the last word"); has = the entity has a
    token there. Every token of an entity gets the same vector, the continuation's included."""
    b, t, d = hidden.shape
    keys = _group_keys(entity_ids)
    uniq, inv = keys.unique(return_inverse=True)
    in_context = (
        torch.arange(t, device=hidden.device)[None, :] < context_len.to(hidden.device)[:, None]
    )
    weight = (in_context & (entity_ids > 0)).double()
    sums = torch.zeros(len(uniq), d, dtype=torch.float64, device=hidden.device)
    sums.index_add_(0, inv.flatten(), (hidden.double() * weight.unsqueeze(-1)).reshape(b * t, d))
    counts = torch.zeros(len(uniq), dtype=torch.float64, device=hidden.device)
    counts.index_add_(0, inv.flatten(), weight.flatten())
    n = counts[inv]
    has = (entity_ids > 0) & (n > 0)
    means = sums[inv] / n.clamp(min=1).unsqueeze(-1)
    return torch.where(has.unsqueeze(-1), means, 0.0).to(hidden.dtype), has


class CoreLM(nn.Module):
    """A causal LM with (gating=True) or without (FT) the Entity-Gating layer.

    entity_vectors: "mention_mean" (the paper's reading, module docstring) or "table" (a
    persistent parameter table of n_entities rows, ids 1..n_entities; 0 = no entity: the old
    training rule). Trainable parts follow App. A (`freeze_for_training`)."""

    def __init__(self, backbone: nn.Module, n_entities: int, *, gating: bool = True,
                 n_heads: int = 12, flow_rate: float = 0.5, dropout: float = 0.1,
                 gate_init: float = 0.0, gate: GateForm = "entity_floor",
                 norm: GateNorm = "after_gate", entity_vectors: EntityVectors = "mention_mean",
                 mention_mean: MentionMean = "previous"):  # fmt: skip
        super().__init__()
        if entity_vectors not in ("mention_mean", "table"):
            raise ValueError(f"entity_vectors: {entity_vectors!r} not mention_mean / table")
        if mention_mean not in ("previous", "inclusive"):
            raise ValueError(f"mention_mean: {mention_mean!r} not previous / inclusive")
        self.backbone = backbone
        d = hidden_size(backbone.config)
        self.n_entities = int(n_entities)
        self.entity_vectors, self.mention_mean = entity_vectors, mention_mean
        self.gating = (
            EntityGating(
                d,
                n_heads,
                flow_rate=flow_rate,
                dropout=dropout,
                gate_init=gate_init,
                gate=gate,
                norm=norm,
            )  # fmt: skip
            if gating
            else None
        )
        self.entities: nn.Parameter | None = None
        if gating and entity_vectors == "table":
            self.entities = nn.Parameter(torch.ones(max(self.n_entities, 1), d))  # §3.2: ones
        self.register_buffer("static", torch.ones(d), persistent=False)  # e_0 and the init

    @property
    def train_entity_mode(self) -> EntityMode:
        """The entity vectors training uses: the table's rows, or the causal mention mean."""
        return "table" if self.entity_vectors == "table" else "running_mean"

    @property
    def head(self) -> nn.Module:
        return self.backbone.get_output_embeddings()

    def hidden(self, input_ids: torch.Tensor, attention_mask=None) -> torch.Tensor:
        """The backbone's final hidden states (what its LM head reads)."""
        return self.backbone.base_model(
            input_ids=input_ids, attention_mask=attention_mask
        ).last_hidden_state

    def entity_context(self, hidden: torch.Tensor, entity_ids: torch.Tensor | None,
                       mode: EntityMode, context_len: torch.Tensor | None = None
                       ) -> torch.Tensor:  # fmt: skip
        """C: the entity vector of every token (§3.2; module docstring for the modes). An
        entity with no state yet (its first token under "previous", no context mention under
        "context_mean") has §3.2's initial vector of ones."""
        context = self.static.to(hidden.dtype).expand(hidden.shape)
        if entity_ids is None or mode == "none":
            return context
        known = entity_ids > 0
        if mode == "table":
            if self.entities is None:
                raise ValueError("entity_mode table needs entity_vectors: table")
            if int(entity_ids.max()) > self.n_entities:
                raise ValueError(f"entity id {int(entity_ids.max())} beyond the table")
            rows = self.entities[(entity_ids - 1).clamp(min=0)].to(hidden.dtype)
            return torch.where(known.unsqueeze(-1), rows, context)
        if mode == "context_mean":
            if context_len is None:
                raise ValueError("entity_mode context_mean needs context_len")
            rows, has = context_entity_means(hidden.detach(), entity_ids, context_len)
        elif mode == "running_mean":
            inclusive = self.mention_mean == "inclusive"
            rows, has = running_entity_means(hidden.detach(), entity_ids, inclusive=inclusive)
        else:
            raise ValueError(f"unknown entity_mode {mode!r}")
        return torch.where(has.unsqueeze(-1), rows, context)

    def forward(self, input_ids: torch.Tensor, entity_ids: torch.Tensor | None = None, *,
                attention_mask=None, hidden: torch.Tensor | None = None,
                entity_mode: EntityMode | None = None,
                context_len: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
        """Logits; `hidden` = precomputed final hidden states (cached mode); entity_mode
        defaults to the training one (`train_entity_mode`)."""
        h = self.hidden(input_ids, attention_mask) if hidden is None else hidden
        if self.gating is not None:
            mode = entity_mode or self.train_entity_mode
            h = self.gating(h, self.entity_context(h, entity_ids, mode, context_len))
        return self.head(h)

    def freeze_for_training(self, *, embeddings: bool = True, backbone: bool = False) -> None:
        """App. A: "We freeze all 12 GPT2 Transformer layers and apply gradients only to the
        input layers [...], output layers (the language modeling head) and the Entity-Gating
        layer": gradients to the input embeddings (token and position: every nn.Embedding of
        the backbone), the LM head, the gating layer (and the table). embeddings=False (cached
        mode) freezes the input embeddings too; backbone=True (FT's full fine-tuning option)
        trains every backbone parameter."""
        for p in self.backbone.parameters():
            p.requires_grad_(backbone)
        if embeddings:
            for module in self.backbone.modules():
                if isinstance(module, nn.Embedding):
                    module.weight.requires_grad_(True)
        for p in self.head.parameters():
            p.requires_grad_(True)

    def untie_head(self) -> None:
        """A head of its own (cached mode: the cached states were computed with the input
        embeddings a tied head would change)."""
        head = self.head
        if head.weight is self.backbone.get_input_embeddings().weight:
            head.weight = nn.Parameter(head.weight.detach().clone())
            self.backbone.config.tie_word_embeddings = False


def gate_figures(gating: EntityGating) -> dict[str, float]:
    """Eq. 14's gate as numbers (a learning curve's): the mean of w and of sigmoid(w), and
    the entity path's share of the mix (entity_share: its mean, min and max over the
    dimensions)."""
    with torch.no_grad():
        w, share = gating.gate.detach().float(), gating.entity_share().detach().float()
        return {"gate_w_mean": float(w.mean()), "gate_sigmoid_mean": float(torch.sigmoid(w).mean()),
                "entity_share_mean": float(share.mean()), "entity_share_min": float(share.min()),
                "entity_share_max": float(share.max())}  # fmt: skip


def entity_parameter_count(model: CoreLM) -> int:
    """Parameters CoreLM adds to the backbone: the gating layer (+ the table, if any)."""
    extra = sum(p.numel() for p in model.gating.parameters()) if model.gating else 0
    return extra + (model.entities.numel() if model.entities is not None else 0)


def causal_lm_loss(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Mean next-token cross-entropy over labels != -100 (shifted inside), and its count."""
    shift, gold = logits[:, :-1].float(), labels[:, 1:]
    n = int((gold != -100).sum())
    loss = F.cross_entropy(shift.reshape(-1, shift.shape[-1]), gold.reshape(-1), ignore_index=-100)
    return loss, n


__all__ = [
    "CoreLM",
    "EntityGating",
    "causal_lm_loss",
    "context_entity_means",
    "entity_parameter_count",
    "gate_figures",
    "running_entity_means",
]
