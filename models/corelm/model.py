"""CoreLM (Stylianou & Vlahavas 2021, papers/003): an Entity-Gating layer after the last
decoder block of a pretrained causal LM, fed by persistent entity representations.

Written against what every Hugging Face `AutoModelForCausalLM` exposes: the final hidden
states of its base model (`model.base_model(...).last_hidden_state`, after the backbone's own
final norm: what its LM head reads) and its LM head (`get_output_embeddings()`). So the same
class wraps GPT-2, SmolLM2 (Llama) or any other causal LM.

Equations (the paper's §3.2-3.3; numbers as in papers/003; the extracted text lost the
formulas, so the forms below follow the prose and are our reading of it):
- §3.2 entity representations: one learned vector per entity, initialised as ones, kept in a
  persistent table across the whole discourse; one static vector (ones, never trained) for
  tokens outside entities. C = the per-token sequence of these vectors (Eq. 9's context of
  entity representations).
- Eq. 13 Entity-Attention, the Query/Entity/Value scheme of Stylianou & Vlahavas 2020:
  softmax(Q E^T / sqrt(d_k)) V with Q = LN(H) W_Q, E = C W_E (entities take the keys' place),
  V = LN(H) W_V, multi-headed, causally masked (App. A: "masked multi-headed entity
  attention layer with 12 heads and a 10% dropout"). Tokens of one entity share their key, so
  a query gathers the positions of the entities it attends to.
- Eq. 10-12: as a GPT-2 block with the self-attention replaced: M = H + Attn, Z = M +
  FFN(LN(M)); the layer norm of the output.
- Eq. 14-15 gate: g = alpha * sigmoid(w) (w a parameter vector, alpha the gate flow rate,
  0.5 in App. A), out = (1 - g) * H + g * Z.
Deviation (stated): the layer sits after the backbone's final norm, and its output layer norm
is applied to the entity path Z before the gate rather than after the mix, so that g = 0
gives exactly the backbone's hidden states and logits (the paper places the layer between
the last block and GPT-2's final norm, which a generic wrapper cannot reach).

Test time on new documents (App. B): entities are not in the trained table; their vectors are
"an average of the hidden representation of all the entity mention[s]" -- here a causal
running mean of the backbone's final hidden states over the entity's tokens so far
(entity_mode "running_mean"), so no position sees a later token. "Without coreference" =
every token gets the static vector (entity_mode "none").
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

EntityMode = Literal["table", "running_mean", "none"]


def hidden_size(config) -> int:
    return int(getattr(config, "hidden_size", None) or config.n_embd)


class EntityGating(nn.Module):
    """The Entity-Gating layer (papers/003 §3.3, Eq. 10-15; module docstring)."""

    def __init__(self, d_model: int, n_heads: int, *, flow_rate: float = 0.5,
                 dropout: float = 0.1, ffn_mult: int = 4, gate_init: float = 0.0):  # fmt: skip
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not a multiple of n_heads {n_heads}")
        self.n_heads, self.flow_rate, self.dropout = n_heads, float(flow_rate), dropout
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

    def gate_value(self) -> torch.Tensor:
        return self.flow_rate * torch.sigmoid(self.gate)  # Eq. 14

    def forward(self, hidden: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        p = self.dropout if self.training else 0.0
        m = hidden + F.dropout(self.entity_attention(self.ln_1(hidden), context), p, self.training)
        z = m + F.dropout(self.ffn(self.ln_2(m)), p, self.training)  # Eq. 10-11
        z = self.ln_out(z)  # Eq. 12 (on the entity path: module docstring)
        g = self.gate_value().to(hidden.dtype)
        return (1 - g) * hidden + g * z  # Eq. 15


def running_entity_means(hidden: torch.Tensor, entity_ids: torch.Tensor) -> torch.Tensor:
    """Per position of an entity token, the mean of the hidden states of that entity's tokens
    up to and including it (App. B's average, made causal); zeros elsewhere."""
    out = torch.zeros_like(hidden)
    for b in range(hidden.shape[0]):
        ids = entity_ids[b]
        for k in torch.unique(ids[ids > 0]).tolist():
            mask = (ids == k).to(hidden.dtype).unsqueeze(-1)
            mean = (hidden[b] * mask).cumsum(0) / mask.cumsum(0).clamp(min=1)
            out[b] = torch.where(mask.bool(), mean, out[b])
    return out


class CoreLM(nn.Module):
    """A causal LM with (gating=True) or without (FT) the Entity-Gating layer.

    n_entities: size of the persistent table (ids 1..n_entities; 0 = no entity). Trainable
    parts follow App. A (`freeze_for_training`)."""

    def __init__(self, backbone: nn.Module, n_entities: int, *, gating: bool = True,
                 n_heads: int = 12, flow_rate: float = 0.5, dropout: float = 0.1,
                 gate_init: float = 0.0):  # fmt: skip
        super().__init__()
        self.backbone = backbone
        d = hidden_size(backbone.config)
        self.n_entities = int(n_entities)
        self.gating = (
            EntityGating(d, n_heads, flow_rate=flow_rate, dropout=dropout, gate_init=gate_init)
            if gating
            else None
        )
        self.entities = nn.Parameter(torch.ones(max(self.n_entities, 1), d))  # §3.2: ones
        self.entities.requires_grad_(gating)  # FT has no use for the table
        self.register_buffer("static", torch.ones(d), persistent=False)  # non-entity vector

    @property
    def head(self) -> nn.Module:
        return self.backbone.get_output_embeddings()

    def hidden(self, input_ids: torch.Tensor, attention_mask=None) -> torch.Tensor:
        """The backbone's final hidden states (what its LM head reads)."""
        return self.backbone.base_model(
            input_ids=input_ids, attention_mask=attention_mask
        ).last_hidden_state

    def entity_context(self, hidden: torch.Tensor, entity_ids: torch.Tensor | None,
                       mode: EntityMode) -> torch.Tensor:  # fmt: skip
        """C: the entity vector of every token (§3.2; module docstring for the modes)."""
        shape = hidden.shape
        context = self.static.to(hidden.dtype).expand(shape)
        if entity_ids is None or mode == "none":
            return context
        known = entity_ids > 0
        if mode == "table":
            if int(entity_ids.max()) > self.n_entities:
                raise ValueError(f"entity id {int(entity_ids.max())} beyond the table")
            rows = self.entities[(entity_ids - 1).clamp(min=0)].to(hidden.dtype)
        else:
            rows = running_entity_means(hidden.detach(), entity_ids)
        return torch.where(known.unsqueeze(-1), rows, context)

    def forward(self, input_ids: torch.Tensor, entity_ids: torch.Tensor | None = None, *,
                attention_mask=None, hidden: torch.Tensor | None = None,
                entity_mode: EntityMode = "table") -> torch.Tensor:  # fmt: skip
        """Logits; `hidden` = precomputed final hidden states (cached mode)."""
        h = self.hidden(input_ids, attention_mask) if hidden is None else hidden
        if self.gating is not None:
            h = self.gating(h, self.entity_context(h, entity_ids, entity_mode))
        return self.head(h)

    def freeze_for_training(self, *, embeddings: bool = True) -> None:
        """App. A: backbone blocks frozen; gradients to the input embeddings (token and
        position: every nn.Embedding of the backbone), the LM head, the gating layer and the
        entity table. embeddings=False (cached mode) freezes the input embeddings too."""
        for p in self.backbone.parameters():
            p.requires_grad_(False)
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


def entity_parameter_count(model: CoreLM) -> int:
    extra = sum(p.numel() for p in model.gating.parameters()) if model.gating else 0
    return extra + (model.entities.numel() if model.gating else 0)


def causal_lm_loss(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Mean next-token cross-entropy over labels != -100 (shifted inside), and its count."""
    shift, gold = logits[:, :-1].float(), labels[:, 1:]
    n = int((gold != -100).sum())
    loss = F.cross_entropy(shift.reshape(-1, shift.shape[-1]), gold.reshape(-1), ignore_index=-100)
    return loss, n


__all__ = ["CoreLM", "EntityGating", "causal_lm_loss", "running_entity_means"]
