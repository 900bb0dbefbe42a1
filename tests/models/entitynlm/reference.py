"""The implementation before the speed work (issue #13 point 7), kept as the tests' oracle:
the mention scan one mention word at a time and the sampler one word at a time, verbatim."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from models.entitynlm.data import Batch
from models.entitynlm.model import NEG, EntityNLM, decision_points, distance_axis


def gumbel_argmax(log_probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One draw per row from softmax(log_probs) (Gumbel-max trick)."""
    u = torch.rand(log_probs.shape, generator=generator, device=log_probs.device)
    return (log_probs - torch.log(-torch.log(u.clamp(1e-20, 1.0)))).argmax(-1)


class ReferenceEntityNLM(EntityNLM):
    """EntityNLM with the original (slow) Eq. 8 update, mention scan, word term and sampler."""

    def gate_update(self, e_old, hu, ph) -> torch.Tensor:
        delta = torch.sigmoid((ph * e_old).sum(-1, keepdim=True))
        return F.normalize(delta * e_old + (1 - delta) * hu.to(e_old.dtype), dim=-1)

    def word_log_probs(self, pred, channel, tokens) -> torch.Tensor:
        logits = self.out(self.drop(pred + channel.to(pred.dtype))).float()
        return logits.log_softmax(-1).gather(-1, tokens[..., None]).squeeze(-1)

    @staticmethod
    def write(mem, last, n, ent, pos, e_new, rows) -> tuple:
        """Store e_new as entity `ent` for the rows selected (masked, out of place)."""
        n = torch.where(rows, torch.maximum(n, ent + 1), n)
        if not torch.is_grad_enabled():  # evaluation and sampling: in place, rows selected
            sel = torch.nonzero(rows).squeeze(1)
            mem[sel, ent[sel]] = e_new[sel].to(mem.dtype)
            last[sel, ent[sel]] = pos[sel]
            return mem, last, n
        slot = F.one_hot(ent.clamp(min=0), mem.size(1)).bool() & rows[:, None]
        mem = torch.where(slot[..., None], e_new[:, None, :].to(mem.dtype), mem)
        last = torch.where(slot, pos[:, None], last)
        return mem, last, n

    def _mention_scan(self, pred, upd, batch: Batch, keep_distributions: bool = False):
        """The entity memory over the mention words of each document (packed left).

        Returns (logp_e B x T at mention starts, e_sel B x T x H = e_{E_t, t-1} at mention
        words, e_cur B x T x H = e_current for each word, and at mention starts the whole
        distribution B x M x K if keep_distributions, with the packed positions)."""
        b, t_len, h = pred.shape
        dev = pred.device
        is_m = batch.is_mention & batch.mask
        count = is_m.sum(1)
        m_len = int(count.max()) if b else 0
        ar = torch.arange(t_len, device=dev)
        pos = torch.where(is_m, ar, ar + t_len).argsort(1)[:, :m_len]
        valid = torch.arange(m_len, device=dev)[None] < count[:, None]
        ent = batch.entity.gather(1, pos).clamp(min=0)
        starts = (decision_points(batch) & is_m).gather(1, pos) & valid
        idx = pos[..., None].expand(-1, -1, h)
        hp, hu = pred.gather(1, idx), upd.gather(1, idx)
        qh, ph = self.w_entity(hp), self.w_delta(hu)
        hu = self.entity_input(hu)
        sentence_axis = self.config.distance_feature == "sentence_exp"
        at = distance_axis(batch.sent_start, batch.mask, sentence_axis).gather(1, pos)
        slots = int(batch.entity.max()) + 2 if b else 1
        mem = self.prior(b, slots, dev, pred.dtype)
        last = torch.zeros(b, slots, dtype=torch.long, device=dev)
        n = torch.zeros(b, dtype=torch.long, device=dev)
        rows = torch.arange(b, device=dev)
        logp, sel, after, dists = [], [], [], []
        for j in range(m_len):
            if keep_distributions or bool(starts[:, j].any()):
                lp = self.entity_log_probs(mem, qh[:, j], last, n, at[:, j])
                logp.append(torch.where(starts[:, j], lp[rows, ent[:, j]], 0.0))
                dists.append(lp)
            else:
                logp.append(torch.zeros(b, device=dev))
            e_old = mem[rows, ent[:, j]]
            e_new = self.gate_update(e_old, hu[:, j], ph[:, j])
            mem, last, n = self.write(mem, last, n, ent[:, j], at[:, j], e_new, valid[:, j])
            sel.append(e_old)
            after.append(e_new)
        logp_e = torch.zeros(b, t_len, device=dev)
        empty = pred.new_zeros(b, 0, h)
        e_sel_m = torch.stack(sel, 1) if sel else empty
        e_after = torch.stack(after, 1) if after else empty
        if m_len:
            logp_e = logp_e.scatter_add(1, pos, torch.stack(logp, 1) * valid)
        before = torch.cumsum(is_m.long(), 1) - is_m.long()  # mention words before t
        table = torch.cat([pred.new_zeros(b, 1, h), e_after.to(pred.dtype),
                           e_sel_m.to(pred.dtype)], 1)  # fmt: skip
        index = torch.where(is_m, 1 + m_len + before, before)  # e_after[before - 1] or zero
        index = index.clamp(max=table.size(1) - 1)
        gathered = table.gather(1, index[..., None].expand(-1, -1, h))
        e_cur = gathered
        e_sel = torch.where(is_m[..., None], gathered, 0.0)
        extra = {"positions": pos, "starts": starts, "dists": dists}
        return logp_e, e_sel, e_cur, extra

    @torch.no_grad()
    def sample(self, tokens, mask, n: int, generator: torch.Generator | None = None,
               sent_start=None):  # fmt: skip
        """Draw n (R, E, L) per document from Q (proposal only), each row of the result is one
        draw (document b's draws are rows b*n .. b*n+n-1). Returns (Batch of the draws,
        log Q of each draw). A mention may run past the last word (prefix semantics)."""
        if not self.config.proposal:
            raise ValueError("sample() is the proposal's: EntityNLMConfig(proposal=True)")
        pred, upd = self.contexts(tokens, mask, sent_start)
        axis = distance_axis(sent_start, mask, self.config.distance_feature == "sentence_exp")
        axis = axis.repeat_interleave(n, 0)
        pred, upd = pred.repeat_interleave(n, 0), upd.repeat_interleave(n, 0)
        tokens, mask = tokens.repeat_interleave(n, 0), mask.repeat_interleave(n, 0)
        rows, t_len = tokens.shape
        dev = tokens.device
        r_lp, qh, ph = self.r_log_probs(pred), self.w_entity(pred), self.w_delta(upd)
        ar = torch.arange(rows, device=dev)
        mem = self.prior(rows, 1, dev, pred.dtype)
        last = torch.zeros(rows, 1, dtype=torch.long, device=dev)
        n_ent = torch.zeros(rows, dtype=torch.long, device=dev)
        prev_rem = torch.zeros(rows, dtype=torch.long, device=dev)
        prev_ent = torch.full((rows,), -1, dtype=torch.long, device=dev)
        logq = torch.zeros(rows, device=dev)
        is_m, ents, rems = [], [], []
        for t in range(t_len):
            m = mask[:, t]
            dec = m & (prev_rem <= 1)
            r_new = torch.bernoulli(r_lp[:, t, 1].exp(), generator=generator).bool()
            r = torch.where(dec, r_new, prev_rem > 1) & m
            logq += torch.where(dec, r_lp[ar, t, r.long()], 0.0)
            start = dec & r
            ent = prev_ent
            if bool(start.any()):
                if int(n_ent.max()) + 1 >= mem.size(1):  # room for the new-entity slot
                    mem = torch.cat([mem, self.prior(rows, mem.size(1), dev, mem.dtype)], 1)
                    last = torch.cat([last, torch.zeros_like(last)], 1)
                lp_e = self.entity_log_probs(mem, qh[:, t], last, n_ent, axis[:, t])
                e_s = gumbel_argmax(lp_e, generator)
                lp_l = self.length_log_probs(pred[:, t], mem[ar, e_s])
                l_s = gumbel_argmax(lp_l, generator)
                logq += torch.where(start, lp_e[ar, e_s] + lp_l[ar, l_s], 0.0)
                ent = torch.where(start, e_s, prev_ent)
                prev_rem = torch.where(start, l_s + 1, prev_rem)
            rem = torch.where(start, prev_rem, torch.where(r, prev_rem - 1, 0))
            if bool(r.any()):
                e_new = self.gate_update(mem[ar, ent.clamp(min=0)], self.entity_input(upd[:, t]),
                                         ph[:, t])  # fmt: skip
                mem, last, n_ent = self.write(mem, last, n_ent, ent, axis[:, t], e_new, r)
            is_m.append(r)
            ents.append(torch.where(r, ent, -1))
            rems.append(rem)
            prev_rem, prev_ent = rem, torch.where(r, ent, prev_ent)

        def stack(xs, dt):
            return torch.stack(xs, 1) if xs else torch.zeros(rows, 0, dtype=dt)

        starts = None if sent_start is None else sent_start.repeat_interleave(n, 0)
        draws = Batch(tokens=tokens, mask=mask, is_mention=stack(is_m, torch.bool),
                      entity=stack(ents, torch.long), remaining=stack(rems, torch.long),
                      doc_ids=[], sent_start=starts)  # fmt: skip
        return draws, logq

    @torch.no_grad()
    def entity_predictions(self, batch: Batch) -> list[list[tuple[int, torch.Tensor]]]:
        pred, upd = self.contexts(batch.tokens, batch.mask, batch.sent_start)
        _, _, _, extra = self._mention_scan(pred, upd, batch, keep_distributions=True)
        out: list[list[tuple[int, torch.Tensor]]] = [[] for _ in range(batch.tokens.size(0))]
        for j, lp in enumerate(extra["dists"]):
            for b in torch.nonzero(extra["starts"][:, j]).flatten().tolist():
                n_t = int((lp[b] > NEG / 2).sum()) - 1
                out[b].append((int(extra["positions"][b, j]), lp[b, : n_t + 1].cpu()))
        return out


def reference_of(model: EntityNLM) -> ReferenceEntityNLM:
    """The same weights under the reference implementation."""
    ref = ReferenceEntityNLM(model.config)
    ref.load_state_dict(model.state_dict())
    return ref.train(model.training)


@torch.no_grad()
def reference_importance_log_marginal(lm, proposal, batch: Batch, n=100, generator=None,
                                      max_rows_tokens=200_000) -> torch.Tensor:  # fmt: skip
    """models.entitynlm.sampling.importance_log_marginal before the speed work, verbatim."""
    draws, logq = proposal.sample(batch.tokens, batch.mask, n, generator, batch.sent_start)
    pred, upd = lm.contexts(batch.tokens, batch.mask, batch.sent_start)
    logp = torch.empty_like(logq)
    rows = draws.tokens.size(0)
    chunk = max(n, (max_rows_tokens // max(1, draws.tokens.size(1))) // n * n)
    for start in range(0, rows, chunk):
        part = slice(start, min(rows, start + chunk))
        docs = slice(start // n, (part.stop + n - 1) // n)
        ctx = (pred[docs].repeat_interleave(n, 0), upd[docs].repeat_interleave(n, 0))
        starts = None if draws.sent_start is None else draws.sent_start[part]
        sub = Batch(draws.tokens[part], draws.mask[part], draws.is_mention[part],
                    draws.entity[part], draws.remaining[part], [], starts)  # fmt: skip
        logp[part] = lm.log_joint(sub, contexts=ctx).float()
    weights = (logp - logq).view(-1, n)
    return torch.logsumexp(weights, 1) - math.log(n)
