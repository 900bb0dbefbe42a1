"""InScript (Modi, Anikina, Ostermann & Pinkal, LREC 2016): the entity-prediction corpus of
EntityNLM (Ji et al. 2017, §5.3, Table 3).

910 crowdsourced stories over 10 everyday scenarios; noun phrases carry scenario-specific
participant labels and are linked by coreference chains. One document per story
(doc_id ``inscript/<scenario>/<NNN>``, genre = scenario), tokens and sentences exactly as in
the XML, split from ``clean_data_split.json`` (train 637 / dev 91 / test 182; see below for
the 619 training stories of the paper).

Source: the official release is ``InScript_LREC2016.zip`` from the SFB1102 resources page
(http://www.sfb1102.uni-saarland.de/?page_id=2582; no direct file URL or checksum published),
so the canonical per-file URLs are the raw GitHub files of the EntityNLM re-implementation
that committed the release files (iammrhelo/11747-project; see the mirror's MANIFEST.md).
The 182 test stories are held back from the developer mirror: they are optional sources, and
the mirror's 10-story ``sample_test/`` is read only when the full test stories are absent.

Gold mentions — what counts as an entity (evidence, not taste):
* Every participant-labelled NP is a mention. InScript annotates coreference only as chains
  of >= 2 participant labels (no chain in the corpus has one element), so a label outside
  every chain is a discourse referent mentioned once: a singleton, given its own cluster id
  after the chain ids. EntityNLM predicts "every entity" of a story including "new entity"
  (§5.3), so singletons are needed for that task; unlike CoNLL-2012 (§5.1, "ignore the
  singleton mentions") nothing says they are dropped for InScript.
* The entity inventory matches Ji et al.'s count (§4: "24.9 entities" per story): chains +
  singletons except the non-participant (NPart) ones, ``singleton_exclude: [NPart]``
  (`SINGLETON_EXCLUDE`, the reader's default where its settings name none; the stage passes
  params.yaml normalize.inscript.singleton_exclude). Measured on the mirror (multi_chain:
  first): train 24.51 entities per story (dev 25.30, train+dev 24.61); every singleton kept
  (``singleton_exclude: []``, the earlier default): train 32.94 (dev 33.04, train+dev
  32.96); chains only (``singletons: false``): train 7.30. normalize's notes give the count.
  An NPart singleton is then no mention at all (R = 0). The authors' code would keep such a
  label as a mention without an entity id (jiyfeng/entitynlm, entitynlm.h
  `EntityNLM::BuildGraph`: a token with eidx 0 is scored as "new" (`pickneglogsoftmax(e_logit,
  0)` when `map_eidx_pos` lacks it), gets no length term (`if (next_et > 0)`) and is never
  stored (`create_entity`/`update_entity` only `if (curr_et > 0)`)), which the mentions table
  (a cluster per span) cannot express; either way it is outside the inventory. The paper's
  Fig. 3 (bicycle_092 of this release) does bracket two NPart singletons ("[park]3",
  "[garage]5"), so the count, not the figure, decides here.
* cluster = index of the chain in the story's ``<chains>`` (file order); singleton clusters
  follow in text order.
* 645 train+dev labels are listed in two or more chains (mostly one entity whose chain the
  annotators split, else a set NP such as "supplies" chained with its members). Default
  ``multi_chain: all`` emits such a label once per chain (same span, different clusters), so
  every chain keeps all its elements and the chain counts of the MANIFEST are reproduced;
  ``multi_chain: first`` keeps it only in its first chain (one cluster per span).
* Spans: ``from``/``to`` are inclusive token ids "S-T"; ``end`` is exclusive.

Ji et al. use 619 training stories ("18 stories were ignored due to labeling problems",
Modi et al. 2017), without naming them. Modi et al.'s referent-prediction release names them:
its split lists 200 test stories, 18 of which have neither a parse nor targets
(`MODI_IGNORED_STORIES`); the split file here (the course project's) moved those 18 into train
(637). ``train_stories: modi2017`` (default) leaves them out, giving 619 / 91 / 182;
``all`` keeps the 637. Four tokens contain a space
("1 1/2" in cake stories); tokens are kept verbatim so the labels' spans stay aligned.

Modi et al. 2017's referent-prediction release (`RELEASE_SOURCES`, under ``modi2017/``):
``humanPredictions.json`` (the 182 test stories' 3,346 targets, keyed ``sentence_token``, each
with its true discourse-referent label and 20 human guesses; pinned by sha256, from the mirror
or the raw file of parkervg/discourse-referent-api at `RELEASE_COMMIT`, a copy of the authors'
data/taclData), its ``dataSplit.json``, and the mirror's ``humanPredictions.sample.json`` (the
entries of the 10 sample test stories), read only when the full file is absent
(`released_targets`, which says so in a log line). Entity prediction's test slots are its
targets (tasks/evaluation/entity_prediction.released_slots).

XML is read with expat, without the DTD (InScript.dtd is not shipped) and refusing entity
declarations and external entities, so nothing is fetched and no entity expansion happens.
"""

from __future__ import annotations

import json
import logging
import xml.parsers.expat as expat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.core.errors import DataError, MissingSourceError
from tasks.core.fetch import Source
from tasks.corpora.base import Normalized, document_row

log = logging.getLogger("corefrepro.inscript")

NAME = "inscript"
MIRROR_DIR = "inscript"
LICENSE = (
    "No license stated: the InScript README only asks to cite Modi et al. (LREC 2016); "
    "research use (mirror MANIFEST.md; check the SFB1102 distribution terms before redistributing)"
)

RAW_URL = "https://raw.githubusercontent.com/iammrhelo/11747-project"
CORPUS_COMMIT = "b64cfd54958e60acfbbb9954d32bd4d5fc6ee47e"  # last commit with the corpus
SPLIT_COMMIT = "70c8573f989040e1f2b6e22f6c69a3f2d10dd6ab"
OFFICIAL_PAGE = "http://www.sfb1102.uni-saarland.de/?page_id=2582"  # InScript_LREC2016.zip

SPLIT_FILE = "clean_data_split.json"
SPLIT_SHA256 = "4d0023e876f3492f4d357a078a7ab4985807b83f690d37d9b69ece8a100f1f61"
README_SHA256 = "60658a49cb18d95fa3cdb5aae277a2dcb4f7fe98833072883acd3b7ca5b5e769"
SAMPLE_DIR = "sample_test"

# Modi et al. 2017's referent-prediction release (the mirror's modi2017/MANIFEST.md): a copy of
# the authors' data/taclData in parkervg/discourse-referent-api at this commit
RELEASE_DIR = "modi2017"
RELEASE_REPO_URL = "https://raw.githubusercontent.com/parkervg/discourse-referent-api"
RELEASE_COMMIT = "69af044da900bb28b6158dd0eccc252fcd918547"
RELEASE_FILE = "humanPredictions.json"  # 182 stories, 3,346 targets
RELEASE_SHA256 = "158b0fef7d5938f7d6d96386d999e2d42842bf1df448c16b2b979dee3743d623"
RELEASE_SAMPLE_FILE = "humanPredictions.sample.json"  # the mirror's: the 10 sample stories
RELEASE_SAMPLE_SHA256 = "4bf08478b102801368e1d19fc72b8ff258bab5ee257b661ffae00936eb08dc47"
RELEASE_SPLIT_FILE = "dataSplit.json"  # train 619 / dev 91 / test 182 (+ the 18 ignored)
RELEASE_SPLIT_SHA256 = "acab3288c39de241bb003ffa60427e3cf5e896f8f3271f281d96edbae4e27276"

MULTI_CHAIN_MODES = ("all", "first")
TRAIN_STORY_SETS = ("modi2017", "all")
# The 18 stories Modi et al. 2017's own split (dataSplit.json of their referent-prediction
# release, "Modeling Semantic Expectations" on ashutosh-modi.github.io/datasets; a copy in
# parkervg/discourse-referent-api data/taclData) lists under test but releases no parse and no
# targets for: Ji et al.'s "18 stories were ignored due to labeling problems" (train 619, dev
# 91, test 182). The course project's clean_data_split.json put them in train (637).
MODI_IGNORED_STORIES = (
    "bath_063", "bath_079", "bicycle_007", "bicycle_097", "bus_028", "bus_083", "cake_007",
    "cake_023", "flight_041", "grocery_072", "grocery_093", "haircut_090", "library_053",
    "library_088", "train_040", "train_069", "tree_061", "tree_070",
)  # fmt: skip
# singleton labels outside the entity inventory (module docstring: Ji et al.'s 24.9 entities)
SINGLETON_EXCLUDE = ("NPart",)

# Train and dev stories of the mirror (MANIFEST.md): (story id, split, sha256).
STORIES: tuple[tuple[str, str, str], ...] = (
    ("bath_001", "train", "79b2f4c67756d7c2b2d4a37585e4421454db9a162b1b833f192f5218891a504e"),
    ("bath_002", "train", "a3461ace800b7622a23aad67512a050a9b0fc411ec3658095aec96b0bcc9255d"),
    ("bath_003", "train", "464c7b13cc8f27b80bcfb993e0ce37f6664e1cf43eaa9df331f8579ef2e39257"),
    ("bath_004", "train", "73bb4445346ce348beee6d4c2f6319bd023d357760c3feea517f05cf0caf9b43"),
    ("bath_006", "dev", "3714986b3f6990ed0c7f8e585652e24b934de87672ea7c21ba66f27f9fd280f6"),
    ("bath_007", "train", "3d80a122c5e12c0285604aece27758d84dd0d2c1799c30f4b3cf5feaff05ce78"),
    ("bath_008", "train", "20017e8112ddda5a1514cddbdc29689a6307cf11ddbdbdb387128d0fb20c3e22"),
    ("bath_009", "train", "f7571a8dac084ea346f0393a24bf45322944e640f4a1228a039efc4731fc3734"),
    ("bath_012", "train", "8d5618adc815ef03b7523b3462379d9b24658ff6adc47d3ee63d0a6c4875cd78"),
    ("bath_013", "dev", "af19714a79b0497cca56710a2407a004dccaa45b77b67c3f0513d3bc39e74589"),
    ("bath_014", "dev", "cf1c0bdf538a2e6a768a64f77d05cf44b178276b520983bf79e86c20ebb9a956"),
    ("bath_015", "train", "f0de6d30445bb58bf9462d7e78bbb2f64723992dffd2076754c4ab6ab53996fb"),
    ("bath_016", "train", "dbea3323b83dfe1f97616107fd3ae900ee3a281cf1e39cba501f0ff25e91998b"),
    ("bath_017", "train", "c5115d66d8703614cd0e114408368233eb6ab3f99589156b1765592494f05b36"),
    ("bath_018", "train", "e7d451cdb99d8cdf165ed2341bd479c22eb31b0fd203f258d105470365a01627"),
    ("bath_022", "train", "50a84ce874cbf33a5bc13d24d708d839bee3b1ef5e7a826cd564f7ce5d5a9db3"),
    ("bath_023", "train", "45ee7fbc81893e423fccb930aa7469e7d71bdc83db13f45bf204dab44ee2bcbf"),
    ("bath_026", "train", "9299abd833b297b927b04950b3e2108ec923a13eb87ca8c3a41a7f90981faad3"),
    ("bath_027", "dev", "cabe290053e59e917f67d5676d4bbd512e1f9c8403273722ffa9fdfc6b1a676a"),
    ("bath_028", "train", "79954e6e1651fa48153c7641916be88b6c312e2e1adcc3e40f6bff14910ea986"),
    ("bath_029", "train", "b2f0568edf2a4cf7a641fd46672467b0814d8d41ff4faa5e3eff617eaae390bf"),
    ("bath_030", "train", "89b65c87da03db1273b350214d9530f078bcf777936af68a5a8cce2521035ed7"),
    ("bath_031", "train", "b3dcbb8526252ab21053c85ea072743229c27a84a5ddcc4cf3572b06d506f27e"),
    ("bath_032", "dev", "dbe512378a506e2e2579bab889b7fdbacb3e06960e5dbd5285df21e19858d66c"),
    ("bath_033", "train", "238c82cfdc827bf074fe2019028e04e33f16191dc6ed1ff5d9a2565e89305224"),
    ("bath_034", "train", "1aa9486d0a473ce6288f67619b94c50532dc35606141542c8dcdc84eda52f1be"),
    ("bath_035", "dev", "5162c815b6c265d75243c27b48cfb3b4cc8335540f097ea7f401eab73acd98e5"),
    ("bath_037", "dev", "923b338e753b3783a1592db462bb26a6df1520c67194dd723d4575fa6cdc9077"),
    ("bath_038", "train", "eb0f4ce52bcf9722c46e98098466db0ec9e3f4f58de264d5087e9f3cea44e1b1"),
    ("bath_039", "dev", "acaf9f7c2a063c6f83052bde24eab95031e94262582ffae43d21b88d474e3a65"),
    ("bath_040", "train", "6685994e34868f448ec77825758114fb3b12529edefe7287c300a955b70c2b6f"),
    ("bath_041", "train", "6af72d714c57225b9f879d3f9e8ad80595b81ea73b072db6b4941f75864d0697"),
    ("bath_043", "train", "3a57fa28d478344bc57483ad4d6bf003386cfeb0391a23ba64af4668ecc57f76"),
    ("bath_046", "train", "8b7511015e9bb2b58756d27aea150ead0893cb0b2d1d24baaeeb487120687d30"),
    ("bath_047", "train", "f209caf1d52b994edca2d2aca0c416902681229ad6a65a56b0dc37c9165c932e"),
    ("bath_048", "train", "ac1d798ff7a3fbe3bae2522beb2b509bb2623e8734adf0f69b1d2a758a29c80d"),
    ("bath_049", "train", "6e65ad12ac109b864d91762a3da45ea056e0fdf4e1f0b248f35354816ab1f6ad"),
    ("bath_051", "train", "77fa43058f5f9a9408e28f9901e31da55de3ff02deb65b7fa2260c76d1801294"),
    ("bath_052", "train", "66d5e6a0ba374c885b1395ee2ca585ef98d3dbb3e97e396ea529610c93fe24c5"),
    ("bath_053", "train", "16db166be0a338d8fc1ea096f7fddb41dea0c591894c5355d1af2fd5e8ad537b"),
    ("bath_055", "train", "adc3517eea2bf58eb8d7bca1501379b422a1eefd813afef936e35234787038f4"),
    ("bath_056", "train", "ecdf57ea087dfee9434b66270c4b640e358c2e9458f21f65264cfb83f66c27bb"),
    ("bath_057", "train", "2826fa646a8f20a63aa2082a042f052b7dfac0233d81953ea7730e92881778a5"),
    ("bath_059", "train", "db27c9e173ca752cab4df2a56e9c700d0c942b4f1d6f3d7c9b2401f9a95df4af"),
    ("bath_060", "train", "0266ae7765bcafd6406031d1cdc82f0a7229f1f76913b758dc8dcdae60dc0c7f"),
    ("bath_061", "train", "b7cbbc78d45bb823c8eefa978b9d1a807f5c8ab77d51b40a5322ce3be227f960"),
    ("bath_062", "dev", "81cec417517234621eb5fe99d3c9b62c1aefa9c96ad0392dd1ca8dccc9b0c982"),
    ("bath_063", "train", "03248dbe19c21e02d0d11aba873d54233266a18af37dd4a8fd4acb2c3268af19"),
    ("bath_064", "train", "d58a62da00f301cd6ced894060fa6984e4ee1596cce361b3c747ac58eeef6fc2"),
    ("bath_065", "train", "ec87e2e8fcc007664fa46cccd2087799a55e5757cc978ba97bab0a13f5fa50f5"),
    ("bath_066", "train", "6613e9cf94d32bdf2725778498f79c27428a8589995c91c734a74c98d7d9f9ec"),
    ("bath_067", "train", "a02d091665f46108bd20650e87caf0f8bd62c50cc5b0af31779a0cc64734dd66"),
    ("bath_068", "train", "8f304cf7dbf40c8ba044c4c554be3765af1d559c58c5b754b58adc417b3a8bae"),
    ("bath_069", "train", "5094d03fb141374877ad26b57c6caa05b9ed38e47d45519548203f6b97a27f8e"),
    ("bath_070", "train", "e4abc2374318dac999ad16825b728bb69b55e3b22feefdd3183ea4752a7dc50d"),
    ("bath_071", "train", "c4b6aeada4bf0695820929ef3db26198111431efbc180aa73d7f6b14a621db3e"),
    ("bath_072", "train", "a2ba48df858d34d7ae20737226b7943c8346f9cd6625cf1ca425add72d16ad84"),
    ("bath_074", "train", "0155fc4c3a3244495d3402ad02781084941b28cbf84b41e2b35846de924fecdb"),
    ("bath_075", "train", "8e1187d6f2187df015291e76ab16e2a11e1dd08b10214fe49069b3b6d9a40fd2"),
    ("bath_076", "train", "4f9d15a920dc7c309704d2feef8f7a685060b0e51ccf18477caed70c88119fce"),
    ("bath_077", "train", "1c9e78b8204f76ed9aa1477c2ee63dd5d782d5960be1a01b7a84d5e930c905fe"),
    ("bath_079", "train", "426b3154489a38e89423240b289a495d30a2da1b4178fae6f597a1b8b1969e78"),
    ("bath_081", "train", "46956d8c49ebdf834c815ae1a7d9aa5764179d4e97cb76a407c860945fbd3b78"),
    ("bath_082", "train", "d99243ff9ab21b1b083ec955e41638d3ae9f1fde7547b2e9d5e1f7f12b4c020f"),
    ("bath_084", "train", "853df0cba6e997b5bd67da8250cb6fdd931f678b49c449e5b10d822644e99a6a"),
    ("bath_085", "train", "75e6176d6f53d478c8be75efb20648aa0fcae481ce715aa0e60e50bd7ea1103c"),
    ("bath_087", "train", "b67dda37297924c13b63e38457fa2eef41692cd96ff6824da534e0e4c0ef9ed4"),
    ("bath_088", "train", "6ccb491d37b2f54cef01ead32df3fbd4214c78c4384467cab6fc160ec2824200"),
    ("bath_089", "train", "30621d19f399bb0019c988d4d53e84bf9d989777245f8210c4b94af884daac83"),
    ("bath_090", "train", "8bd4826b4b478ebf332860f2ac0a6bca59b359bc15aa19c3009ef627ff90868e"),
    ("bath_092", "train", "58a3deae3d80febada60155e4d968dadf63efb28ed7bbb308a80fcb1df12843b"),
    ("bath_093", "train", "7c706737855c70645c0d4d553bd599aa797a9b7f8d33d0dc224f9155610eed22"),
    ("bath_096", "train", "15e87005554167368ff4f628f2b272a203510d3b188d20828581e1303d319c19"),
    ("bath_097", "train", "04d6f8da5af009c6a383bb961d781a3df9cf2f09a0b8247ac2759db85df95a2d"),
    ("bath_098", "train", "e48cb108539c440f69d422415cc31a6f3fd290498a2685aec90b5fdc380f164c"),
    ("bath_099", "train", "769132fb1581fe2eba830d9b04f51f8bf8fcfd8fbcd1c3b58de58a461facaa5a"),
    ("bicycle_005", "train", "b838cde0afb3288d705958b9b7f74b5253a4c844020d10a3cd205da6ee429936"),
    ("bicycle_007", "train", "2d09b0dc2fb8c2574d7d944daad40ad5faff411e5f166efc8f1f215a025e4858"),
    ("bicycle_008", "train", "0f2e42e963a04f1d175b26c15d3497ac1c4f732f7ca78763e2a56efb445aefa6"),
    ("bicycle_011", "train", "58448072df2ec82571b988b1e9c326b8db297248aedb7e205ddc326bca6602dd"),
    ("bicycle_012", "train", "e2367f7a8cb935690ed170ba2c966b197a1820e57fcfc03f05c48b7206bd0435"),
    ("bicycle_013", "train", "84e5cdd9f146c87bf4141678f09e81afeb17baaaba59d8d68cba25861b81068d"),
    ("bicycle_016", "train", "5f6f29c78b2ed71b0b79dae59fb8101e2910f1e7883cf29b19c17419d8964928"),
    ("bicycle_017", "train", "9feb4a631ab23f2119f501ac72155e0b5da456199242ec27db2d3799435e89f1"),
    ("bicycle_019", "train", "2536903cd86c5a3dd9726891fa8a6749c303f683ec3b9b546d0021a6bcf94c6d"),
    ("bicycle_021", "train", "9b292fd9f9fcfa5c68ba2a05e1432432fa805d92da336c52ec1fe251af354718"),
    ("bicycle_023", "train", "6ba20f6d14a578c3d0696609d2be9bbf4a6150e11a426855303fb0c904badcc1"),
    ("bicycle_025", "train", "0aa3610f78e42108c52a9eb8e806718a8188beb9a4b77527c4bb66f6c8694fba"),
    ("bicycle_026", "train", "04d2f9da90f0ff9e99b75f7622d7a5bbc3e8e969b4448d5de9559f5a19ac0691"),
    ("bicycle_027", "train", "e600c3fe3c95b540f71e1d68e4f5090ee2aaaf96e915df1c4b2becb0523bbb22"),
    ("bicycle_028", "dev", "557a52ba979d4898de238931742a4aa168b58cff759f9c6a2712ef7ff415131c"),
    ("bicycle_029", "train", "76ac231d8efacba06461a1818c7e670118baae7216ccbad4dc71bad35a258a4f"),
    ("bicycle_030", "train", "8c9f5f55898da3f365eaaf1c790988c7dfdf7befc92ec0c36f934e18a97a32b9"),
    ("bicycle_031", "train", "6c0f14131e4b2e6e5f028aefbbdc10165e7f2a6ba8b4a1c6ffaa9080926ce7e2"),
    ("bicycle_032", "train", "97a26a3eaed428920456aef786b86614333ef0df25747b24d3973e099fdc0eb0"),
    ("bicycle_034", "train", "dd68d25acaf1121798bfd80d4a80ba545d6dfb972169716b46562c08607d6c89"),
    ("bicycle_037", "train", "655608f667debf810800baea026a2f01bd3976b508cde48e54827a99627ec49b"),
    ("bicycle_039", "train", "6e013f772a382a6a8c71682523336e1a80f961890ef36fd21408d2a9c0582e5b"),
    ("bicycle_040", "train", "5c9ed52fdc5540a28d51711893c4e6c8f211fddd352983e1894b4b837772c2e9"),
    ("bicycle_041", "dev", "97bacdcd00f7c5052be8c9dddcd402586dd9ae2799bc71fe748e04d98bc4dfbb"),
    ("bicycle_042", "train", "20fa789ff5fcf67942cf9105c41a4565d6509209136c330bcd1052acfb3920ac"),
    ("bicycle_043", "train", "7057c4fe5209b92e43e9788820160782eb0d2fa018ebd9ddfbead400c73d6902"),
    ("bicycle_044", "train", "2f675a3342550d55900e62534ae2de9fb43874e48b218bf7443faec0fae71421"),
    ("bicycle_046", "train", "f6261de0baa6d9061ba27686620f7ebf66fe40a2d07daae135ba6f6a0e6d9d92"),
    ("bicycle_047", "train", "1910ee9ea5a3dcda92e6066b2010d73e1bb4a180db2a31c2b38a1553b3680330"),
    ("bicycle_048", "train", "277b003e321670bd3abf822f645016f1e0117a0e76d5b91e8fb6a286abfa61c8"),
    ("bicycle_049", "dev", "5c7508269e78530d747986c5ab6c3741e0e9536ba92854937710443c25015965"),
    ("bicycle_050", "train", "063647e75584595d1c914bd57b36e37ac26692993ce7ce6dfa0a2ce68cd758ef"),
    ("bicycle_051", "dev", "77bc932448cd7a22d6a0a7f57814bebdf7d0f72bee845f4f81cb28e512336e22"),
    ("bicycle_052", "dev", "bf11e4f63656f06eaa46194aa920cd5b24a6ea8e3637815b54a81e464dcb9abb"),
    ("bicycle_053", "train", "3add81c642935ee882a1e0e059b3451dd4a50c4b3190dae4b73db148eff1c8ac"),
    ("bicycle_054", "train", "354224eb443466403c6c9049882b0e561fd3a620cec3d7064804439093d775a6"),
    ("bicycle_055", "train", "6c0e132f5d68c341ac9d7d2829185cef2b5bcc890ac0a34dd360daae9ab682a3"),
    ("bicycle_056", "train", "16246e6cbdc52701bb01f1af212afff83907625d6af3717053abc48a5bb4da3d"),
    ("bicycle_059", "dev", "ba3ae92a01cceefc1cc53b0692acb1d1389d7f20bceb73a7670a7aaf9ed5f972"),
    ("bicycle_060", "train", "49831f5a2fc691d8d3dec28c2ebaca791c758b3fea81c456756c8c5230f5dde9"),
    ("bicycle_061", "train", "0ed159914cf70352c55101a6fb7b301da1e3aa1219b92ec186a32e2ff4728afb"),
    ("bicycle_063", "train", "71c5e6da8b1c3dc9a98c8f2be2776526ee6ece0adba8317a066fd99571fdd395"),
    ("bicycle_065", "train", "c75bcb26197187d8d4973ebcf47016d35123d42a8dbc6d95408255c817ef6fc6"),
    ("bicycle_066", "train", "245ceceb82586d54acea2fd01ccadcff8623f6c859603003fd2faaf9c74a6457"),
    ("bicycle_067", "train", "e040016e8bc3a9e03a3b4cfc9bf3d3db2e482388d765fd9826378bb8b849cafe"),
    ("bicycle_068", "train", "21969cbc1ea5768995949e23609c925ce6fff43597448097a9e7d5831008dfa0"),
    ("bicycle_070", "train", "67be31e774c08cb708e3225a24e352ff8f9c289482667e1ec48101a796556ee8"),
    ("bicycle_072", "train", "495bd2e8eeecc2e14c3e1e17c21acf13b48180301844eb7c084021f41a9aa274"),
    ("bicycle_073", "train", "229c8706bfcaa5230316d623e7a348bd2a41239107324966f2b8566b25dde12e"),
    ("bicycle_075", "train", "2cfe4c94a8ca6ddec7f3a66394ad65aea613488c971acc644248bbb793b2d8b7"),
    ("bicycle_076", "train", "6e4a6022c0ae5331ce301e1dd6a1c80bc4cf9fcdb145d3791d463dadfa584364"),
    ("bicycle_078", "dev", "3751285c4fc63ebcf52ecbbfcc71f3a7383f165e305cb9d7906a54b79ae69a64"),
    ("bicycle_079", "train", "c2a8d20bfa54c9c39027c3603ded013f0cbcfbd5671395adbde97d627c92faf1"),
    ("bicycle_080", "train", "428227554b3f0d62be83d53a2f1681d19a055b74f90c67f86ef6e2718a3b0b72"),
    ("bicycle_082", "train", "61fbfab10571486aae78e0d1ddedb1cab0870cb20ac0dc92f8789d5662be8d94"),
    ("bicycle_083", "train", "94eb841b8258addfbd23f71c3d490160bf6ec0b5bd3b53bb50b2ca30553704fd"),
    ("bicycle_084", "train", "709438b11548ce3062d3fa5ba4cdd990940a62870ab92632af420ab3c2bd4db6"),
    ("bicycle_086", "dev", "af52ef2b901ac57addf08baae4b64c10677509078eadd87ceefa254ebeece91e"),
    ("bicycle_087", "train", "cbb2150d2df68c7cd19f2c06ef8e85accc887db24123aa8abd4867889d90e335"),
    ("bicycle_089", "dev", "251934d5df3cb3a667e32b8e8954b8448233c658d9be4b632bcf52023111d541"),
    ("bicycle_090", "train", "72e75a6b1459ca89c82bfc7deb7a29e66c99b611bea6c319dc01f020b05b8755"),
    ("bicycle_091", "train", "895d74227c20702b4392d2aa04c7fe4978dddcc9d67ddf88703052383d5790b9"),
    ("bicycle_092", "train", "9c917b75542f2a7e910f7e21fc7ac86757ce3c7bb4f26fcc114684a375b02362"),
    ("bicycle_093", "train", "7e7d1691062d6d61fe2f59284d91adafbb9808e892da9f1d1eb359dcb783fb25"),
    ("bicycle_095", "train", "f3bf5fb0a063c5c0a0b2539a7848b283f85299381c234277acde131ce7b3b917"),
    ("bicycle_096", "train", "90f9d41d0b207d877ea0d1f9494a0a1720dd85d7c3839d338389b9db2049cb8e"),
    ("bicycle_097", "train", "49f96a30c47e43376dd4ee4dd62e27eb9992a5d3d6f7430a1218b71b52c28aae"),
    ("bicycle_098", "train", "7c59d8210e1d51a5a8990ce5c32782b5a2c508f09f5cebc8762ed366df5252f0"),
    ("bicycle_099", "train", "271ed676f274cd50b1264879821e535fd5477ce53e4b28954b940c8f7738d34a"),
    ("bus_001", "train", "93975fa07e35f72186b15aba44a4ed7199c4f40b8ff8bfe6ee83655f2305746c"),
    ("bus_002", "train", "739692787cb68e3468422d00251a1f39c2fb295b553d2823bb4cbde291d9c397"),
    ("bus_003", "train", "626b1d5e363c8b0fdc6b7784f1bdd2c61e654e2db91b1353135b9b9099f97022"),
    ("bus_004", "train", "98889ce2c7aa729775e2585d6a96a374dcf6ca14be43f58f5cb08438a83f3878"),
    ("bus_005", "train", "4eb65ccb14aec827d1f6fc81f6c2f8cd214199432c6f91fbb1eb1afd6b0c8bb2"),
    ("bus_006", "train", "3cf21e5b5ec550298496ed97c3ed26c8a75fc0e96a2ee5feb8f3b3cc2f9565ee"),
    ("bus_007", "train", "a24cf805b7daf68025fc99a346f76f5e63cf2f173c8932efcd2f4a9227cfa909"),
    ("bus_009", "train", "fe9ed5c9726cd0ea1842c0f467048d340249d4be906228273f64b3b881a63e1b"),
    ("bus_011", "train", "08e895b19b811b01de46e447fd8274a1e11988a6afefaf60a8df48ea1ca2abb0"),
    ("bus_012", "train", "e215a5894bcc2ba3d48fdbbe4bd8ac69ffa9c20b3b898681887c805c52d15127"),
    ("bus_013", "train", "c1e3679ccb1ded6f02354621166793ef4ab6dc06a184578ee71bc3828af4a2f0"),
    ("bus_014", "train", "075060defcd2c07b773801ae4401fae8e61dc33760ddf60140cefd3fb0b90788"),
    ("bus_015", "train", "22e7213afbf6b49035bd09f0ea1c5cf9d2f9a0663c921bef0b4985019f8253a7"),
    ("bus_016", "train", "e885dc772a5ef32caa41a500363ef6d55013cb1cc10a37f9468106f82a71daa9"),
    ("bus_017", "train", "e3839fa8ffa8ceb890ad485ea5a2db2fe92ba60b34650e8b998c61f6b034a6b1"),
    ("bus_018", "train", "ce1938fa32730db0f6608721590f1ff525e58c21c64f08a1e52dda8b28dcd98d"),
    ("bus_019", "train", "de5bb43002166da554d3eec9a4f142a694f3d5dbb472d31709ac65fbcaaf53bb"),
    ("bus_020", "train", "d4c2b8fd103bcd812f0e01b7fa38b6199faf7c0fa980f3850a5729459e29b4ba"),
    ("bus_021", "dev", "320947ed7a80d7e03f44734afc890df15d7a9545bf6dda789f70498bf242f633"),
    ("bus_022", "train", "f380c364c9d2458c1ae1f2a3028e1fcb6fc3476f376fa64e8f74f9be5734bcb0"),
    ("bus_023", "train", "878c280b790e3070e303b0ef20cc212f88531e2e58d31c7d7873f1a3f23029e6"),
    ("bus_024", "train", "1a0ecc3cef32ddb381690ca3f118c2577e6b25f1d597aac918bd5ec40a77bd6c"),
    ("bus_025", "train", "1cd6fb33f5b6807ad15cdb04467473f979ab37ac9c98503786cf57455fc84c4b"),
    ("bus_026", "dev", "63f8ee45fbd495cb093c4326899a82f971704b4c5ec42b7e393800f6097c2d14"),
    ("bus_028", "train", "10f4d8a484ea5f9b8409b43011d1adce0f31704882238fcc284963f0d73c1dfc"),
    ("bus_029", "train", "a20bdc3f17bbf6e1ad232e91b6eb0a6562b3d47c78a8e6ca4d8e9b367c0ded64"),
    ("bus_030", "train", "3c38cad76805e8e49718a85f3b1299f3c646337c7dbe625af0228b79b66da601"),
    ("bus_031", "train", "56ef0f08c36600e49f3632490b37cecc4392f10ebdf15e71482b3851a6da419e"),
    ("bus_033", "train", "7621f62f8cae4283c42e60c30950e7ef809901170d5cec169b604772b8df55ad"),
    ("bus_035", "train", "639d3e74a4858534bf1d05bdeb8002a2a467f8ab5f0b4ebe441f5a32a4ff4f3b"),
    ("bus_036", "train", "965453af83509d1830371f4b596390cf29a659d0f4aed9ac5538451e4f88b6d0"),
    ("bus_038", "train", "d8f9aceb05cce50773aa9bcd57d3a0d6a5690828de9485452f4c3a0922d5020e"),
    ("bus_039", "train", "92a51449a4f55d197b0fd855e054288b1486025d01e74ae7043a93b74c2db68b"),
    ("bus_040", "train", "460885cb39679e6719e4f5bbfc03c39173cc2c8b713e2b83f12c127ede09e693"),
    ("bus_042", "train", "708a8ff0b0da1a7b8d29519153501e33303eef07e9f9bb771e78f45f2ccff435"),
    ("bus_043", "train", "5ee60077c9767609f0236d10e49ef5c5082cdee4052e90394b0d1df4674c615c"),
    ("bus_048", "train", "d44bb46149d1f4af5cdfc6ad64ed4daf9b1ae52d787c2e4263aa276c34ee68d4"),
    ("bus_049", "train", "29ce2e79f87ae89d5693af02129f60603b53f7ef251d6c2f2a903c46b2d1b220"),
    ("bus_051", "train", "cc7b39d2ed116b8891a4b885341ccb646b6abbc9ccef99501f028331fb45e4f9"),
    ("bus_052", "train", "005e84a02bd4657e9353f5f8baf17664f0bdcdcb8c9c3e1fb6c40a782f067921"),
    ("bus_053", "train", "602fef3d898429a14ffd8e91b828d833d3633da49b099e04829d5f156357a481"),
    ("bus_054", "dev", "2ac2344fd678873454e689f7515985c29ee12c08385d5a20192fde58061f2d0f"),
    ("bus_055", "train", "a63598bcdd36b75c7a964181e3197908db2bab2d6cad51b5c08976d11957577b"),
    ("bus_056", "train", "45409bdd568684fc4aeb8ee078167ac1c8b94dc466be276df43d7b2637210f19"),
    ("bus_057", "train", "058b31eb357fedef4bb27403674648dad52347ecbfe09d46d45adfc0402866f3"),
    ("bus_058", "train", "aaa8877ec16554b6ff5ba62d667848e77538d4dbf6e8fae41ac27d6bca3e4d5d"),
    ("bus_059", "dev", "820af5bda1178288260edfeb1b7d566acc4e15345f16c00ae98aa804ceec10cc"),
    ("bus_060", "dev", "a068b7af6f1f6d1e09fdfba236bdcac93ea40652edf802037ab578239f0efeae"),
    ("bus_061", "dev", "231a65ef218251a338543908ee56ae43f81ef9acb0e83d4de824dcc7bc223d7a"),
    ("bus_063", "train", "60255cac3815b236942f3fbf2793ebd726b79ed0af5ce3615a45367302885270"),
    ("bus_065", "dev", "74d9eda08299d7d60960252eed59b3447ac65d3751df91b7d62140f6d3b882a7"),
    ("bus_066", "train", "816e34591045be1910377db684e0cf22ea9b3f0e6d18fda892277983db62a1a5"),
    ("bus_067", "train", "6a618d414cd82c6574a2c2d238741a91f3b0ec8bce9a3059026cb8adb8c8d1bd"),
    ("bus_069", "train", "9057c71dfabd9269e859a97f73748126400745a7dfdc021bb358d9e17f14b39f"),
    ("bus_071", "train", "d08b064e249b0073d65a9b6cb2b89eb30dadac0dd0f9e5470f8398776d5f7ec4"),
    ("bus_073", "train", "e8acfebd4c8af83e53f54f6bd4458f86b608edb709cf25625a325addfced930b"),
    ("bus_074", "train", "c302bf97f1c8028f57d2c0a8f8b0ff14de4812cf8bf7fd9b7b9bca72e1781391"),
    ("bus_076", "train", "8ef5ff674ac9391c495c1d350d92c41dc2fae0cfd00116981d0471a455176764"),
    ("bus_077", "train", "6216b60cacdb8a17469937b2fbd7851798b30cbc9a4af77d8d25b33eb624888a"),
    ("bus_079", "train", "c4b3b5a3c1e274d51fb6ba8cf22764f41b8218c634cd8e45c06e7c945e10e8c0"),
    ("bus_083", "train", "20342b10d21406f6a4f96f61c48b31e5c0b66f7d44586e042fa502b66605faf9"),
    ("bus_087", "dev", "e72636b65f64962139f4ab8937c4ec651a1cacbdd2d9935f19a74d7886b534cc"),
    ("bus_089", "train", "c888dcf256da9900cef0a84dea19b42f0f00194299a78b806feaab860ea3ca55"),
    ("bus_090", "train", "db77e8d3a23d17c7349b02a4e67af65dbde81d2276d1fed5702eca91855d3587"),
    ("bus_091", "train", "a55b933d17793127cc83382db857474f3a833253d6e43c8b891cc8c3d96677ee"),
    ("bus_092", "dev", "d9433d8a57dda1c1568f14184af182b2678152cceea7c509c5a70d71fc026d36"),
    ("bus_093", "train", "1682c0eec402292c051bc0587caf2729559b4c239d39591bda8dd720e3038108"),
    ("bus_094", "train", "9e772618d01e27448dcdbef4b6ee51d8282e7417c0e2f4c10ba29b48d27a08f6"),
    ("bus_095", "train", "7d819f416034a80dd6da0e88a2fdc6c185806c229463807dd72bf798e0713c62"),
    ("bus_096", "train", "5d2ba7364c0a9c3987920e02d84b87a8fe63338d92178d624b9d9ae3cb14e426"),
    ("bus_098", "train", "20bad305951728affd74687e1bf2cba956e7bfbe1f2ff1e7bfd0520bc3bc62b8"),
    ("bus_099", "train", "ee371d3fcd8d9203174c4a1293c51a07775d401748673dc07c3e84121b1af72d"),
    ("bus_100", "train", "84da0ade19511d3a5f82a40feb5f8e46123e31623b8a2f3eb63da0c7eac92774"),
    ("bus_101", "train", "6b029b7d0ac1d1e9ea76b3db7d02dff853bca7ea4adc2590c6a7a1f4620b6ff5"),
    ("cake_001", "train", "dfcac89617f29575dc17fbcb272e7673b38ace05e007078ececfe36111f60a29"),
    ("cake_002", "train", "9d30aee692788b0e30da8fc3c80b82d10592966e913c875bb48043e5eb6c8f36"),
    ("cake_003", "train", "a62cd75eaee3abf2d33ad457e1f0534d454590e03012b75dee15da31887eca63"),
    ("cake_004", "train", "24896686d157d153a65e5eee174ff016d8cb6a3993bd2bea555e24f197b6ea12"),
    ("cake_006", "train", "d9ae53574d0989534bc34464c9ab18f9f4ed93426d02e81dffab0eaa4513b2ac"),
    ("cake_007", "train", "5d7ffdff54f603a79f5dd582f314580cabedc328020e1f9323d0db58512188f0"),
    ("cake_008", "train", "5a07e468f620225464a4bf28328b315ecd40724f4b36c42ef2ff815fa097a6e1"),
    ("cake_009", "train", "73bab133e90512cac10e02c251a9eb6c856b9dd9a4bc33b64d98568d7fdc65f9"),
    ("cake_012", "train", "d49bda46f3dc0f897351a538e849cb4d5b2933c79da5ef26e636759fe5b9debe"),
    ("cake_013", "train", "b8b83a3d30b2460fff83484975616d7fa8112b544530c44d25745bb0aab8147e"),
    ("cake_014", "train", "7e51ee6ba0eeb6144080ac808f79c6d5a70cbb4cf9ef09bc309a9595fa853609"),
    ("cake_015", "dev", "86ceccafe65fa0378080950019cb201024b722efa8010c60eb16b328c495907f"),
    ("cake_017", "dev", "047184ae3319b51b79328fd0e73dc299244bcd6f518c3343c5988163ff2ae518"),
    ("cake_018", "train", "f5860e3d6ccb10b85e3cf3192522d50f11b3779119505b7bf141611844403288"),
    ("cake_019", "dev", "0e0ef30b562e738c5541de0321f2a2474aa398cf4100e5b1be42d8b3f8b9a950"),
    ("cake_021", "train", "6e5b094e0e64762c1d130e265d4daed6690fa7efe50c87ab614478f3f7ce9906"),
    ("cake_022", "train", "f3b5b3d138ba7e0fd7b1d1fa93c9a78d2c6b6efc48de6a8bfd9632f908969a4d"),
    ("cake_023", "train", "cf224a1d0733b0f445ebf5d9486506446da6ffc71234650acddc662ced571445"),
    ("cake_024", "train", "c9131981aa03552ea0a9644993a8c27c22a9c3792476a93ca2fc6007c80e8f10"),
    ("cake_025", "train", "42a4f46fb0e759f4044fd007e9208af364f9d0f540278b01d3b11ab2d2f3de29"),
    ("cake_028", "train", "e76f7b6d43b2c4f1bc5451678512ce35feb1998871c4d1da5434c0f5f4c86533"),
    ("cake_030", "train", "0e7afefb361c35b2ef00af0f32bdde52b41e8aa97ac16e00a230438ec8393bfe"),
    ("cake_031", "train", "dbdd243c1c2fb5ae98f5647b37789c2fe79300f9bdba91b935342b6fcea4ffbb"),
    ("cake_032", "train", "e607bd8e5f93c8a440e4a8ca62f5d1d52b60b37bcc7d7dbe97daa67dba7dae0d"),
    ("cake_033", "dev", "88aec0a9a9211e52c0b9b184ce6586073fc80853ce54fce6116cd15c57d6003a"),
    ("cake_034", "dev", "9aaeb386f3b46d1ee004aebf49cc370e7f2f0b6786e72d3f69e62baeff459656"),
    ("cake_035", "train", "90776f5036cd625ed01268f7ad27f2bd849b3f50bf3ea66803e0d0f549ac0194"),
    ("cake_036", "train", "b84a8450d21db96e3938d25408b739ecb925a18bd037a316a6cd765b57201181"),
    ("cake_037", "train", "c9cce4f1ad6bdbea8cb1a8783c07b63d03c2814704b722bb02c6927be786b3c1"),
    ("cake_038", "train", "b3c54d192e5c5a2d4e2614c7566e946e6bba33254e7fcc8f8959164772bfc1b1"),
    ("cake_039", "train", "7ca7c0ba09c418d022754d4860190fa365e63e185a9c299df2fe6c54a6c21edb"),
    ("cake_040", "train", "45ad64b8588f8d3eaf7be62f866c195f761ec46e0d7a9ea9486d88e015d9aa15"),
    ("cake_041", "train", "3109c02f9d189483cd947e710b1e848afff116d640a53446fb49544bb794deea"),
    ("cake_042", "train", "f3c700a9e9e5eb124a1b9a7bdc26dd821841dda154dfda6858c42fbef3327571"),
    ("cake_043", "train", "db7dc17b724e2eddc1fb18a1fcfac34c13059afeac64f660408db393ec624821"),
    ("cake_046", "train", "5ae8cf11d4b0446891128077904eeea00fab1b8ddc5f1e82865ed3b5d8799c73"),
    ("cake_047", "train", "e1167512d5e016968af7159787971da3f4deaec4df2f500427065044e06f74d4"),
    ("cake_048", "train", "5aaedfeffc17fecd6a2829dac5202333934902561ff7185a9df14c769393bf38"),
    ("cake_049", "train", "4629318ad91cc2b0836e1c6b2e122f20cd12d4ac08ede31df21fbf5969c93e38"),
    ("cake_050", "train", "6b18e0fbf8496cfcff5de793f29fecc78a81e2785e35fbeed154d76a0f45fd34"),
    ("cake_051", "train", "dfd6fefc56b323bb7799587563d1b8651bda3ec0ede3c437291d1b152a661318"),
    ("cake_052", "train", "18e1321ef1a688edcfb165c539a12b36c605fa394c92b326cf1e3d446b1d8419"),
    ("cake_053", "train", "e7945ed819f768d927709463c33d81fe6165f1fece411b25c34e5d356793df90"),
    ("cake_054", "train", "6e8752ee2cf32eea2150339956b7222f09840d99cd33c50c7bd574eeb1d269ec"),
    ("cake_055", "train", "bbf1dc45e4e9efe8f4a0602d0bd31e881a66d6474b81b73ba07ee483904ea34d"),
    ("cake_056", "train", "adc2890afc27dc09d4aca741f03ace5f4140204ee8a878e10e41959148657765"),
    ("cake_057", "train", "f3db459575dcb10ed47a472974f801e59f6a27a26776361e2ff3d413e9bf8484"),
    ("cake_058", "train", "8bd88872cdc48b5d37c9f627eb4d87fddff381c7496ee9b2ffd796da7ece9560"),
    ("cake_059", "dev", "33690e074dc391a7073fb4e08e1fdab233607a0a08f66834d42c640f6f22aba7"),
    ("cake_060", "dev", "c8e9aeaa72e50ff727e86d022e0c84143d047a4346b942418145edfe2dc535ca"),
    ("cake_061", "train", "f2924a18de73eda54f19868da3d2b782b2a074097ad1025d43bd588c0e93dadf"),
    ("cake_064", "train", "651587e74dfc4655daf2c2621d73d4c518db701aaec11bfc6dd8a483baf65ba3"),
    ("cake_065", "train", "b2d19088bc76ed27fa729020804e6250fea1feede46a61bcf137f30c3789401c"),
    ("cake_067", "dev", "1d0b544b92d002eb837ec851b7615926771698a565be69448f7c1758bd01be0f"),
    ("cake_068", "train", "5a5a5abc50c55e3312c6954abd37344a322bcce85df64ff77631ec8443ab5214"),
    ("cake_069", "train", "cfb44089c9071d5db9c976759149a4240502675c1288f34d961018dbdf19090c"),
    ("cake_070", "train", "223e74c00067bac92dbb3eb81250fa631bc7f41c8b2046e43b2d64d2dcf404f0"),
    ("cake_071", "train", "83fdcf09ab4ea481f9d46c2b1e19ff5bb319d96adcc51471f074e7f7eac3891f"),
    ("cake_072", "train", "63f7aad54706f5fce1456c6a0034dc06fdad0e237bd702031831255ea3755144"),
    ("cake_073", "train", "44049388f8b1bb5c494a0113e1dd0a961748a555f070cc7529a6905c76a7e80c"),
    ("cake_074", "train", "15721d1fcfc205da48751173803203ffedeb411565f18721ff64d010db83d5c5"),
    ("cake_075", "train", "8fd5a814fd0b81dfab5d865bd45682512237249e0e7d7a0fdece81f5b98dbbfc"),
    ("cake_076", "train", "19b06e4a524c9220e6ca2daed6d731be1cfe7b9dd48e2b8fed4ffeab19e54729"),
    ("cake_078", "train", "792320d2f22ce15a5ed7d946c3a7a60441ac3aa59a624c08b5e184b4397b4cd1"),
    ("cake_081", "train", "5985aa2322933188b92c9c609e4b4255b0e7e09975d3ba80a70c2875317401e2"),
    ("cake_082", "train", "19b21c92a17ffd16256faea2509148a32f542c2f8df19593d20b2d922f3aa2eb"),
    ("cake_083", "dev", "2a2c24b2efc023dc64b42d09380f30402541ff520ac702b08b3d6ea3abc13514"),
    ("cake_086", "train", "8a86471e140516d94fdf6def4b709263124af45e8027f05a6f7fe099386c47b7"),
    ("cake_087", "train", "e0918fd79668d1646f3fa1de42b4fe42a212bda4fda355e9d168d0eaec0c0dae"),
    ("cake_089", "train", "504a705e2264a11155b96c1d8147f02bafbb30b4dbe469f21a0d04724da62717"),
    ("cake_090", "train", "aa8c7636f5983cd27bddaf6fac80f7429af934442f69738cb95dbff2053499a7"),
    ("cake_091", "train", "b5d301bd40f5edb0ffa9b4fc8d775db065c5f6291fc4425d18c3f9257ff4191a"),
    ("cake_092", "train", "ea16ef644595664491ec86965befda52d23666a915d837ed0b52ded5a1162f60"),
    ("cake_093", "train", "f0a66ad10425764f24bfed22d68fd7477fb2d0d34241125fbeb4b07e939769c6"),
    ("cake_094", "train", "47eff1d9cc78c994f83e0d1f18622a9269fa8b13a0f9e24216f2d0d30af8a8a2"),
    ("cake_096", "train", "9bb0c7a2721c9e9fd82fec3b805648bb9683e98ec64ba5a76c0f0e9c9a1baa61"),
    ("cake_098", "train", "384530b47a125d365da8f002ee833cc3b764e3d4955ac3a122c610e9dabf245a"),
    ("cake_099", "train", "44303665b92ef91b7bc86b563cb30ed4b1a301f5b90f8dbbb1f729fc6375ae78"),
    ("cake_101", "train", "9a2025d9504f3baa8a6723beb449e6e6fa6f8eba411e9d91d199de2608cb84b8"),
    ("flight_001", "train", "26d7cf1175a472c095975175787210daa01b2034a7d9012be64a3110509d02b7"),
    ("flight_002", "train", "482034e11b0017884814d1fc248d225767bb2b7f17adc07be967ef8bbd3fb2a6"),
    ("flight_003", "train", "6b88a316266cbd9d5f5111951e537faa0cc219c37bfa0189391d44c5531fcf36"),
    ("flight_004", "dev", "7c17d2175be8ac372d3c963b0a8aab13fc953da7a18eb2bb34eb266739ab56dc"),
    ("flight_005", "train", "baa5169fbc9f267d89e55c40e8075f8fcaec9ec1c01659a9ac6d2fe965599c51"),
    ("flight_007", "dev", "3f41de91b6069021f03c4ff80dfae364f62a7e4153563b3a1767d02b32e594b6"),
    ("flight_008", "train", "9087028be697cae31c91735cc3c3c4c3344d5ba8def10dd22d7fd50aca52f05b"),
    ("flight_009", "train", "0a065daac72a24c3ac07eb6f9454dcd0a583424746bd6792215e99134f52bb6d"),
    ("flight_010", "train", "d2f933fb7a7e0068f859af00efc50dea7cfa55a06e464f8fc3ff32ff2b2f9908"),
    ("flight_011", "train", "91779348f046554615157cd40e872a05214fc64294046f61d7336e67699e4adf"),
    ("flight_013", "train", "f007472931c37214b92c046132edc9c5331f61d821ab0ad032f97bf672c2220d"),
    ("flight_016", "train", "3b6fa2ce6515fbed0399eafa09df6fecabfffdd875175d9adb70383afabfc5ea"),
    ("flight_017", "train", "229cd7c7c81f3970b41a182eb9bb574a819863f9caec849b2897d43e865007b7"),
    ("flight_018", "train", "497cad7fc5fb02032e5c48a492a7a91e7848a2eefa69794c9720351110649063"),
    ("flight_019", "train", "08493ed16ce0df5a1f3e081f11f6127fc157c72892734d2d28a03d3635a99ba5"),
    ("flight_020", "train", "bc05466d5833c9b22e838d505131eecc8d2043f15d7b1094b2a344ba7df8dd2d"),
    ("flight_021", "train", "6e2480ed7a5dafb59bc4e04950c05202e335a2d8f0ed9476069590f4f1fccb12"),
    ("flight_022", "train", "e829d3cd3a0584ccdfa00615851a09ff8f2613f3e1da42bf46afbb646248a80b"),
    ("flight_024", "train", "41d795cf48fa475382e53899955f08b5de6249114d8af108e07f38eed29c0f56"),
    ("flight_026", "train", "c689d150e76b4cafb3c69e30c15049f0fd4ef78de16153da47dab9092c197e76"),
    ("flight_029", "train", "728bc1a43c0f15f87a1d26d564a7a302570825edfa8d103cf6001d0a493eb69b"),
    ("flight_031", "dev", "342ea230b664996321bca1389163f85c96ac51397847ee220954c8ea07ee6689"),
    ("flight_032", "train", "fb67fd692616ff7c7bf6510faaa6c6dbbaab5941aa303a8b1cab3a014901bd94"),
    ("flight_033", "train", "dbcf371eb29571706d56cc4efe627ea045035158cbc148b228e14ae22d55884b"),
    ("flight_035", "train", "d074caf50b75df5a3bff6c9ec9e805248f4b22d450a440df5461009cc22188fc"),
    ("flight_039", "train", "654c6bc8c7094ff72a29f4bf0ed3f67d92b137049e1496229d484c1bcd7f0f81"),
    ("flight_041", "train", "e88b24de40555c25a953f7a0aa2236f64151bd07745ad81d51d93f88f8f213e7"),
    ("flight_042", "train", "24226b58798fbc737f36611b9eeef0cb200c1274f8ce7f7299ad7c4b78c0deee"),
    ("flight_043", "train", "1fb0307054762c750355121173a65270acd2234fff8638b8dcee73a13c6a182f"),
    ("flight_044", "train", "3b764c185f5e71377ad8c2f2400700b49c7ada170244a91221294e0642b94e3e"),
    ("flight_045", "train", "00e535d94d4f81a3c01c314bafc665a563a7492ec4957cc26db29285010ab515"),
    ("flight_046", "dev", "e2f9a90b01dfc7effb949c45887436862e96f058d149d665cacf2bda93277a25"),
    ("flight_047", "train", "589ae505bfe5d37f8c36af8f4f63b2ca7344ce3aef9547b31734db68261a4489"),
    ("flight_048", "train", "fb0f57b9d9c8644f0abb6961c0d418a3553605080355edc7c342eff7984d966a"),
    ("flight_049", "train", "9a1d139f1fdc99736defe8d4e2896ff5d832619756e9d39b4cc9f4fc68e234ae"),
    ("flight_052", "train", "30268f2a11af6f3dc2efe82df85ed9c253cf58588e434c803675588de821d793"),
    ("flight_053", "train", "92a83c16417a46ae41fb6b4850344b7d8282e60ee9500073917a3ae206b91cd1"),
    ("flight_056", "train", "34c067675bcd4e5d372d2ee153ebe2517d00401ecfe2bf8d4365ee071e860b60"),
    ("flight_057", "train", "fb2bbea3ade8bea2046c842688e5d359ec6015ced6caf1404ce4b6619a83cf80"),
    ("flight_058", "train", "ab973f62f45addb4c8fd2ba147ccaeef771935e072a17be62a1342b82aa898a9"),
    ("flight_059", "train", "9d8f5926dfc1fac9c347094494243708013bada2e639f901fb204c602f2be3ab"),
    ("flight_063", "train", "9a2ff516f8f8171cfa21c810409dfb55b571b88a0a0bdf724e9582b436e05119"),
    ("flight_064", "train", "3ae9d63931aaf6fe2173b54c261256da57078ffb373b685a341e3be6df402aa9"),
    ("flight_065", "train", "6019a4b996c53ac5540c69a94ef4583c670e5c807762dd77fde82b196efd539a"),
    ("flight_068", "train", "980e7bfc606ac42dd7a2bb20eede2e7575ce1553a2fbabc35aad4fa677237089"),
    ("flight_070", "dev", "59b65e421a8d678014b40d7be81d8bce6381f5f42245581c0024e25df239963a"),
    ("flight_071", "train", "74e143e1d8bf69c146c7af20f1cb3648d5ee451a673782d842b0b2d4f008a4c4"),
    ("flight_074", "train", "a5433f221d4be5535e54e067c4fa1c94c68b0020b2c082827f16a66fade2639d"),
    ("flight_075", "train", "db83494edc16a5cd245b107455081e6e0451dfd5d5fab7dbad7b734409a6c1b5"),
    ("flight_076", "train", "eb45e3e32f2dec2a5b026bf813a1e1117a899f5cf100087387656b947e41758f"),
    ("flight_077", "train", "f351c9de8352f607f73261098ee0a27fe382cfbdb06c7dab6b07f864f72891ad"),
    ("flight_079", "train", "48c4d24207ead56c1a148f96b2bec3b649859b83a4b3b708a9e68c8fef5be960"),
    ("flight_080", "train", "b31f9819394edd99d39d8de7cb9e46731edbb544d3d67ac5b2574f1e0747290b"),
    ("flight_081", "train", "657c8f3942fe09f66a24d10e3f84cc1c0ca953d5e357e695aca6705dc9037e2a"),
    ("flight_082", "train", "9881716a7fb75ed0b7e3d68f990c69c61b4581db98e8a2e84cc76f67b2f70fcd"),
    ("flight_085", "dev", "321680ca99b5da26e1b227d7eb86b5d92624ce715170f75ea202e7baa0b82100"),
    ("flight_086", "train", "3ff4338ce5d5f74323e626fc75ca4a34d85f3ddac1dfe724e3776588e2604c90"),
    ("flight_087", "dev", "55560ab9ec76b1ff799907cdc3576518b43c79f8e08cd1eb9011e6bad925ba75"),
    ("flight_088", "train", "424e2f285bbecf20d64539fd332a26768dfc86b342d63ddd8ef41097273fe470"),
    ("flight_089", "dev", "8539113d7f1a51c3d9a041f6951d24ed4f148bbee656f52f6ce7f5e28905c0ec"),
    ("flight_090", "train", "52a48ee4d45503bf6d1a55049b8dcf65c59218e0195ede0bee0f5c60d422768a"),
    ("flight_092", "dev", "41a75635af42b855769c2fdff66cc0a4e479c9265ab2eaf138a380d455601569"),
    ("flight_094", "dev", "afff33daccb422e930ab5a68d70da1ebef8293cff8ec13b490c8874bde94cc03"),
    ("flight_095", "train", "14e92739d08ddffcd8a3d79efcc1dff89a3217aa7ee369706e0cf9ec4e08ee74"),
    ("flight_096", "train", "5ef634a1366ad5cc19bd3d2f00f6566be28998d2ac74d13dab52035cfed46b71"),
    ("flight_098", "train", "da7697ea054f7199ff37b3efb074b329928bea3b87938a68c09ea655deba886e"),
    ("flight_099", "train", "0e44bd49870cd1da3129dce795bc9e303288acaf145b5358d8e6d0eab1a15382"),
    ("grocery_001", "train", "1196c7470ad6695863b32ef27e16779d277dae57ba5236986f37757f97b9ce5f"),
    ("grocery_002", "train", "c96bea946a59821c45658f94a5637064f80d4ffba7b193f2c30a4226ad8eae87"),
    ("grocery_003", "train", "94d271e7ab04a99430c9b03ddef299ec8dde0bf7eea71de55f31d6600573be44"),
    ("grocery_004", "train", "686ef9779a252e77e0aca7117235f9395d3f5ef38effe2effb0382dce8a3f8ae"),
    ("grocery_006", "train", "594e00d1567fb385d0cda74679138bad4e82260354694aeb07f2d4bea5b02336"),
    ("grocery_007", "train", "4da701b63ffb850eb72e6452d52997af71a8b65eac0cd9689df68e8e9e24eef3"),
    ("grocery_009", "train", "25632adc070063963bb649c870a775359b1ab13fa6b9abcdc2a2bc031dd710eb"),
    ("grocery_011", "train", "e5889960e886e1039e4ebc99dba1e856a4b70d443227593c7c2eb40047e27443"),
    ("grocery_013", "dev", "e246efc7e3e8a6ded6d246ab1bfac491408a05a67e3c1be8c6681505bf906ef9"),
    ("grocery_014", "train", "6cd51b19ad983bb93b9758072be67be03674381c159419cc0424135d8de97577"),
    ("grocery_015", "train", "a5a59494dd4d1f5600c253d189169b1a50a4d06b7a367d0d922d0c118d060502"),
    ("grocery_016", "train", "eea5795808011470d474dc32588ea08d2356cd443473382af73e67b0fcd79398"),
    ("grocery_017", "train", "dfe41dbc3a4050159955184774792d3a50fcc64e5a6975f0a2f62d13817b6284"),
    ("grocery_018", "train", "e4a13785ba9b0edf62d22e6209308929cbd7db72158583235fdb8df45058982b"),
    ("grocery_019", "train", "4dd13d3c17ec9dd9d960dfbeb4444286ea13b0dc1459b3455243b716c9a9577a"),
    ("grocery_022", "train", "643fc637d9799c2d8e1e85683b24c53dd246ece9be7262681ae8fc18b25db19d"),
    ("grocery_023", "dev", "ae57936779d96643defe83a8170fe0fab2b46308fe53a93ee87bb908d478bc6a"),
    ("grocery_024", "train", "89e93066ccf57b556e4cefbd5aa447a51ed4d92aaf57e1f3965a58e99493cd7e"),
    ("grocery_025", "train", "ac45e8ba60b255dc4634aa2de3b77c5a944959487a69a46da80df3a4addc5762"),
    ("grocery_027", "train", "985fc0f4bf3ee2b7627279a464baef7b1e8d0cd126f6c66b29af72fa9b23ae54"),
    ("grocery_029", "train", "73d1c03d65ace1e4271b1ddfd1e542b75042a75307835d8ac8764670d0a8a491"),
    ("grocery_030", "dev", "afec4750a27ce5416b1dbb7cffb127f38e3607a1100459dae4ca3a3fea236794"),
    ("grocery_031", "train", "277ed6b3e0354c801353d2d9d171f00bd2ec1b54e848f2a5e61448300588e7d6"),
    ("grocery_033", "train", "fa4dfec975b136bc6cab26e1b158f3ea601ff49f17a2931fab3337ebc7cb56b1"),
    ("grocery_034", "train", "08662f601c078bd7bd8136547ca974f0ad439d7cb12557d1639da60fef05a0cd"),
    ("grocery_036", "train", "810a4945cbe9f39dc18dd594e5d2d4d3c63ad6666194dcb50306bf1548c626fe"),
    ("grocery_037", "dev", "c13cb77e9e7129ab21839e8fc4711b1e25117d8eb1a3172ffb7e6be06cc06ca3"),
    ("grocery_038", "train", "9ba15d7223e58091e5aac50eae9d408d9a917c8d50a4d1d6354ec8eb9d848417"),
    ("grocery_039", "dev", "9ab7cab1532486cae7360d17ac0941725168653d2511ee6ea89aa5ab594ba4e9"),
    ("grocery_040", "dev", "6d93f4510bd54cf57c5035804b849b1b38c130e53301ae3c49b58c7c2da5669e"),
    ("grocery_041", "train", "371720bc8f76f7d4b73279cfce0dd09ab0205692c3155a919ea91c09d3cf73f0"),
    ("grocery_042", "train", "dc4bb003fe7e5f731a094074b4ed1971f15042268875ea4f5fd9951d5a8869c5"),
    ("grocery_044", "train", "28db7361669c51fad330579de5d6cd0adf3e7072f323a7d5aa858541532e5c2b"),
    ("grocery_045", "train", "29987c6922801f0f4b2e9196e05b33f1f72a3bcaad226a661b306972c2ca5913"),
    ("grocery_046", "train", "52f84863a12b96b6d56f6b79c183012d7a85d2f90cfacc428209773f34f33cea"),
    ("grocery_048", "train", "4dbfe8004901a0fc40d840a2213bf17d7a8dad5fd86cc7462eb1ee4db0cc14e5"),
    ("grocery_049", "train", "e9811602a0537c2538a4f2d4949006f893c839c80420dccc2c72b7ef97870fd0"),
    ("grocery_050", "train", "edfc6dcc4004078ca3dab515d2f193c93a0bc53a0bb2c2b18abef1fd66ab796a"),
    ("grocery_052", "train", "e82841e76cae89fee52a0c90d700259105b0973c0ba81d3feee1cfdf75d2fbc1"),
    ("grocery_053", "train", "0ac3c0734f0a725a4b1d29ae7b9cf0c986aa7d09cab2b03895ee5fba066b85f5"),
    ("grocery_055", "train", "624382c98c01db61325c52dd9696e40a7657b49add356e8917727d3c66bfad0e"),
    ("grocery_057", "train", "d47c52998358238c6bbae4b99e773516ea418f9824928872bb27b1e0677a8680"),
    ("grocery_058", "dev", "c8356844808f81da32b683ecd9ea5e32a66abb597a832fd4d91792aca8fbd2d4"),
    ("grocery_059", "train", "49bb343557bb2ed328f765cf7da6ddb7ec16199df2caacb5f28635ea032969ee"),
    ("grocery_060", "train", "598a5ab2fc60328730d6bc23d7c59c5f599cc929cbef4dace3e8f6693fbb433a"),
    ("grocery_061", "dev", "c4c69a5e688ae75a8c2f3346acd89b89d4e2b705b929606c6a76960b5b14a792"),
    ("grocery_062", "train", "afbc16cfce57aea610cf0bb5d0968d4adce4eccfd001b3464d39c2ac54161a02"),
    ("grocery_064", "train", "e0309f469247df0c8ec46974606511ad74a1d85f8d452dbe5805de7e4a9ed95d"),
    ("grocery_065", "train", "a43e00c86ed0e87842fc619711892c3998ea8aec124ea2bafaa85e09cf80bb2c"),
    ("grocery_066", "train", "678edba665d06c577cd86de0bc40083b0a7ebd3cabc3b84b92612e996539f756"),
    ("grocery_067", "train", "adff3d1e996e71b17a51a70779e4ec0d46eaf5c84ff7b510aba5757c298bb325"),
    ("grocery_068", "train", "bd3fbedd56b7c9ad9708af7c421df2ab2455dc0c4caa98a31c7065c00df42482"),
    ("grocery_069", "train", "92a4ea3992b373ab9ac7c310a481bd5c4267a211cc78a41ffbb9bc56f38a949b"),
    ("grocery_070", "train", "f10d5d1e0de9fe17ad711acc55eb0652d0f6a4578d3c806df5897faebb6df277"),
    ("grocery_071", "train", "987f57c4980e72f0c7d3b29057036973c1bdb40356068781c260883c9a6a0f9a"),
    ("grocery_072", "train", "40d032cbfe854843d8f97cf75eb9c630de8fa6d5da210679d1b9e5031f9ad81f"),
    ("grocery_075", "train", "97dda7b8b5d48a0be22bbdd20ac7629cbe4b5331459606db948b2ee2e681ace4"),
    ("grocery_076", "train", "07e52290f864658c5a20058995b283ea0f35e8e87cef384b1040c0705011b26b"),
    ("grocery_077", "train", "500825fd4034eea9ba7fd2f7305b19c14e4ddb58323cc666c481b8df4efe2771"),
    ("grocery_078", "train", "9213a758fe031c110ae1c50ec9c608c822acafd6c64f7b3c94315a26f77de08d"),
    ("grocery_079", "train", "485e3a4cc80f204fe84a78cf1d25f07a793be9652b3fb4deae74b1a1876b2ff0"),
    ("grocery_080", "train", "2888cc3dc50047d5a86accd0405c91cb64191b2fae645cd19418e8a0a9844861"),
    ("grocery_082", "train", "7ceae158710ac146c72a48c2ee8bbc24a68b9c9a86388abc24b9b44f20a8b1ee"),
    ("grocery_083", "train", "e237654b62db51f0ae990b9b03cb9c3b4193d12ddad5ba3c062625cabb5857c4"),
    ("grocery_084", "train", "43d629516744eb1aecca3d98da3e5648df32c2c9523611bf9b53e633b434630f"),
    ("grocery_086", "train", "8a45a763ad5b652591004f263fddeada68171e88bdfeba8919d630e63f044af9"),
    ("grocery_087", "train", "286f420f69d18b11e838331f132fc43ad90c94c6c7ba615ab8a2f953c1b5e028"),
    ("grocery_088", "train", "80b4a2a53aa562d3ea3ce94df64432792b025d8e2e493b89b9a902d27a421039"),
    ("grocery_090", "train", "9be7f839d3a1a5713b5fe9f82a57727852afcb39d34bd1f81d62dd712c7bce05"),
    ("grocery_091", "train", "b31cc65e53fb061c491c11bd3a118472e5fa592fa1a48e358fae99c081506383"),
    ("grocery_092", "train", "13b4f6c4856d4f8e9ffefd66d98efc72603426fe0748079608b190f479399441"),
    ("grocery_093", "train", "830e983f5c6961d0aa8b308256cd2a6144af6f487645c499adc7424926422efe"),
    ("grocery_094", "train", "157c531d41a27cb41fc90a9e05e9e47b311c20a0d296d2c2db070f11028879aa"),
    ("grocery_095", "dev", "88c65496cb62cf3bbacac9dc2f13003cb43d2cfaabcf61fb65903c06f0e48b13"),
    ("grocery_096", "train", "5cb71e2ccbf2de639628feae36058aa4cdc368cc2824da7c5a0ce27d87c6ca74"),
    ("grocery_097", "train", "f01d802d95f4d9e2542e6d18141f9846719bfa17f56f99ca5e0cf62af7a74163"),
    ("grocery_100", "train", "16b63e00da839bcd151f96582dc4eec493530901b40db84be42f28de7c275faf"),
    ("haircut_001", "train", "ad3300b57c6bf668c89988ca2d5a1787df69b71e324b91efb5e35f9772f09408"),
    ("haircut_002", "dev", "a3fe3d3c0c06ca0dc1dae05a5dddc637b01ca1fd259c0ce35a88f3cf2e79c1b1"),
    ("haircut_003", "train", "fb213d1063ffb2f10edf4eabce688fc9bebbdcc7ca26ba10686182bb056a84ed"),
    ("haircut_005", "train", "349afdb1227f05c6c35a232e7bc400f213f61f1d806110c57fc1a3efa6df262b"),
    ("haircut_010", "train", "3bb8eabb68f213823a0b14e6bd08096a8e718b68cad2e90d319d8a381dd3cd51"),
    ("haircut_013", "train", "2d116b585e73054528156f8a144fde9f2ae540d8084d47332fe6dddad773d837"),
    ("haircut_015", "train", "0b3bc1dd7bf8b0de8186f9bb368d2a6e919f59ea14afd6e345267c5dd2c77d1b"),
    ("haircut_016", "train", "a034d6ea3aa55222e878789fb7b2d53fa3bb9cc3ef9808f8ca66c75dd0084095"),
    ("haircut_019", "train", "83d7c123bd613df9d4ceef50eefa7e2b4ade50b18a7545204a48d55494011399"),
    ("haircut_020", "dev", "e1539194b9066d62155ba93876ca1e32a53f2e85e0c061e552eb2868fcbbe487"),
    ("haircut_021", "train", "e50cc493d81555de73b71cef873a70386a72e4935e046a3268916de1b6c9bef1"),
    ("haircut_022", "train", "6ef88e357f2071c846dbaeadcc9624e6f0d6983c723b5b57d7f31e22f6463398"),
    ("haircut_023", "train", "b0410258a1a5873949ce0c79e1fa543524aa8d2446e5fd409180aabf97c1af99"),
    ("haircut_025", "train", "7d6b8d08917ab74150e5061bcede06a072e6cdffa1135cefb8c47a019a21089f"),
    ("haircut_026", "train", "5627d1f2a5b7caf72c2d43e1f5a21d3989454909ffa3af1770c274689f47c2ba"),
    ("haircut_028", "train", "ac99d6d21cd17f798ca851db2207f907c7fe8163373d28897f8a54ed09f584aa"),
    ("haircut_029", "train", "6731b4f1df63dda1e44328d518d3ebdf0c058bfb3e0bc2aef0b13a94e948baab"),
    ("haircut_031", "train", "de597952e237b4b47e4ce66d20fab4c7df63f5a6b4b7801f485370330a4fb3ee"),
    ("haircut_032", "train", "8307f051c723c22706a4a553f2c542cf15b507466bd25cd6a5ec360e63e536fd"),
    ("haircut_034", "train", "c766c009ffaa84b0b0ddec229f7e85dd3e796e12e762d274c849691cf0ed391f"),
    ("haircut_035", "train", "6ac0c5225fbb792a43384e5b008819c08f80b9728badb0b08596a095e5a45c4d"),
    ("haircut_036", "train", "03e6bebc3419e881ef0f6151da668a0619b8a2e5537f44ff5dd0111135542b7d"),
    ("haircut_038", "dev", "3eced1d6c42131e249a8b6950f0074b697a56ea54acf524dc90d68f01b4b2553"),
    ("haircut_039", "train", "6a12cec8ead3d2fc4284f70864fb47ea2ee19d357806c6f1b398816c90258928"),
    ("haircut_041", "train", "f26cb0151581bb5ff8774008a7c792e571c4bf1f298e1c34bda1f7323d432d43"),
    ("haircut_042", "train", "09b5e7ae2aad47ca0afec3060d5786898bb1a6466686cf9f7bed9263b04a0071"),
    ("haircut_043", "train", "4de8e8f87dd51d46abe692f0417d0b6d6e164c7cc04314042c61f6a22b5009c9"),
    ("haircut_045", "train", "272b9fc3387604f5cbec1f90341aac37d96cc7c986feda49f42273af7eb763e6"),
    ("haircut_046", "train", "24e85fc9217116d4c051fa1e1d8d8c37caf592236b37e5f85c6d6c6166074680"),
    ("haircut_047", "train", "0f139b89948e9d4642e09cc63c4f0b931c32f8c0631aa1a788a1246fda7e3d88"),
    ("haircut_048", "train", "389c929c8227a831fdf0feca226de54ae8055c0e3356706a39619e7d704e9395"),
    ("haircut_049", "train", "d04019a9046505f01e32035407177bbebb68c42879dd04bd6bf5c327a17ec0f7"),
    ("haircut_050", "train", "3526e706894d003facccb7cf6f5475fc7dac4320a523e31d59242f9609ccdb88"),
    ("haircut_051", "dev", "2b41febfe0414498b1792ec5782694ebe14cdd6d6c65ffc515836b957927cba3"),
    ("haircut_053", "dev", "8a7c341b4b5536b4cfc5ba245340a04a3cf3ac9e9bc5b0c08003d9e02a0be656"),
    ("haircut_056", "train", "31164a56edebe6c6de005636d7f9251a033e92bba24f9e59e45de342cff161bb"),
    ("haircut_059", "dev", "5fbd8a0f414ae27e4ae0ac692eb92ef31a1dba5f1c9445f9873f32036fe98b0a"),
    ("haircut_060", "train", "deecfd8103d89c74f36adffc34583145b545b7401920343e825c3d71a721cab4"),
    ("haircut_061", "train", "d199302081f6223d1bb40a97aac08ea55e7cfd9b2ca4a92aaa8f4c6bff21cf88"),
    ("haircut_062", "train", "cca7a5f764144f460df65ca03b85fe1aab448e6b42bad7b3e680bf364eaa791b"),
    ("haircut_063", "train", "35036bc6700872ec0edef6d4f6d3cd7024eca262c449182b80522fef367a96e4"),
    ("haircut_064", "train", "1dfe338969b39428a7cd283c3559e9f29aad0574549caac94a914a3dc971a5cc"),
    ("haircut_065", "dev", "e8c9ab4164a232358311e8f4b5a1e604be1d0248876d35cb6e7f7275887eeb5d"),
    ("haircut_066", "train", "7dda26646e922bb5becd91d60aa06d6aaec60ebe6e379dde9bc2b22e7d988100"),
    ("haircut_068", "train", "d8f38969d5a50ba087efdfa5bc5e6befb417eb607cd078fc55499cc4efc9e68b"),
    ("haircut_069", "train", "b2cd687531b9c67b8e3fa1ce9bf19195cb1a649b3cebe590b52494c5ab99bbfa"),
    ("haircut_070", "train", "617ca871c9c8af2a94066b2184b138280f26d1a63e84ee14d1485a91538191ab"),
    ("haircut_071", "train", "771afd75ff1d833f813a579f811e3d8460d82cf6f3e5fbce3244ad7d7b63cab1"),
    ("haircut_073", "train", "4daddeb3773cffe431f1fba1dd168434a886dbc0622225b032f222793c94c8f2"),
    ("haircut_077", "train", "5fdcc02492930472565879e11f9f5fa932ee4fd31e32051c8364955d322cb12c"),
    ("haircut_078", "train", "33d51168b5582fa71fd2f48f9e476be6a01bbb52c71a60a37fd74053cd56ad8d"),
    ("haircut_079", "train", "01fdc76c0bbd9d96c82d09d895ff5f10e90ff11b0d6912aa12c269ff830c00af"),
    ("haircut_082", "train", "c2047cb48e96fd9f20f681a910ec82d9d5f5e236393c2a6965e2249a94d54b29"),
    ("haircut_083", "train", "8df82f219bf57834c0a3cdd3692f1a5d63da2787cf5e6fa4f3b4342718784534"),
    ("haircut_084", "train", "294c3f814e7081deca96b304eaa2a50046f8918b5eb7ba1670d01a1000c36c91"),
    ("haircut_085", "train", "31e844f7184e5beae75efd81312c9bcb5f56a8b39e0ca995f606613e44965eab"),
    ("haircut_086", "train", "8904a6d939a89629bbd5caa70b8796dee9a37c033bf18a95fd64903aab4b8944"),
    ("haircut_087", "train", "2121ea00f92860acf17222cbfc82f21b21bbafb086bb534c28db999d7b0977ec"),
    ("haircut_088", "train", "9c571cc8df513cf5384766b2a2794570eaad583590a85016f2127bfec6d94fe4"),
    ("haircut_089", "train", "d044c26052c58dde0de536b630a909505e8aea4e21d5f22aa55d44d9fae7b5b9"),
    ("haircut_090", "train", "7903786a3925dce611dd8095530573cc844fae32c4b4883a031a44fd0a41eaba"),
    ("haircut_091", "train", "a4ad0bd3b434370c99b6c7f8caef5669703f67b21ed57ad62d35199f7f3f6c95"),
    ("haircut_092", "train", "e85c68bdbb0433e3aba7d18a3b4323cce1cfeacf1fa49222dcd7bd3b2cd7301b"),
    ("haircut_093", "dev", "898592b68afdabeb0b252ea88147d0eb28e49c9bc7b1e280c87d40f4eac2e6ae"),
    ("haircut_094", "train", "3adc94d68c5335ec098d84dfd603427c8ceaa96567d46e0f522bc20d2f659cd6"),
    ("haircut_095", "train", "8a750634a210279c7ef4e368dbf89fb7ea5765a7ded0fb9a0e8dc25cc59bc52c"),
    ("haircut_096", "train", "4d4582eeb440e8a7e99291949f90e6b35c2ec2e64d13ada23b91e0060c3478dd"),
    ("haircut_099", "train", "b3c8549c93e8f763d4dd4a89bda9ef6b7809f62dbdd65bab702f397f0e601a6f"),
    ("haircut_100", "dev", "19e5c1a38b8fa17a54a91f53a8a589834945733890b75a2be71385ba749bca9e"),
    ("library_001", "train", "809b964332b9881a08b6ee112f720feade17b97d0b11c630ec811edb017d8e46"),
    ("library_002", "train", "556e4498f7ae67c9040c198484095c2d7ae803b393090f36909e7911226f6c50"),
    ("library_003", "train", "c6b8862783747be8f70b054059cad5cb1970644ccee19ac1f2cab4eb679dc608"),
    ("library_005", "train", "c23bd981a47f2120c807adb8b82065b7576fec73d2fea7c00ac8944af2cc2366"),
    ("library_007", "train", "52874e73deda851a699bc65e0e13d4a7aa557b6c4bd486453acc1a921d6f4836"),
    ("library_008", "train", "606b3e99c02bce092aba8b2919607d8e4277865d40afd6f8bf18470b9aa127de"),
    ("library_009", "dev", "7c5fd7ce105386a8782bee1fa48973c48661d6c07c6f4a13e4ee754261a493fc"),
    ("library_010", "train", "62b8fa94a41333be7662610733221fcffc32e19930fd768b0aa241401c9d916b"),
    ("library_012", "train", "3603e270934232d6257aa6909bc81ffbeb0cdeaab22634b06103f8db05c4bcac"),
    ("library_013", "train", "776378f592604a420498c82f8dc2cf681b840d25143e57db5d44bf7a077ed1f4"),
    ("library_015", "train", "dd90bc1de1ea14559a9952c9f18f5add303a3920a972f383ffba956f0192d862"),
    ("library_019", "dev", "884401af40770cbc4efb713364744c1e36458f7bbb27cdb593f75d0fc02369e2"),
    ("library_021", "train", "024f407151e1fffa4453ddf0c54404449ee700cd3fe45bbab5e55a73f772e5ca"),
    ("library_023", "train", "ab1f3d350ef5fe15a41a6dca6411a792465325981109fbc303ce866a5c3ec7ae"),
    ("library_024", "train", "d5ccf6f74852d7553f9588d4bd7f56c5792a3996947784705f0fd038366a3eff"),
    ("library_025", "train", "6c793c879b10ae75d46b0d9e212417ed66f37520c948ade0fc41c370e59539d7"),
    ("library_027", "train", "41232d5953dc4fa7af27287f7029778fa8046610bd0c082d65cc7f489ec01ae8"),
    ("library_028", "dev", "2dd41bd88041814714bcfc0f12867815b06a5f2c0fd049447e6bba7b24c128f4"),
    ("library_031", "train", "a664aa860e575c7d23ec48f95530f4c3094a04f5ebc403cb70a9d289b9b7dc9a"),
    ("library_033", "dev", "3ff49a6b16bc444e4080fd33201ffbf6e49ecc70e6745e6203da99742cce2429"),
    ("library_034", "train", "b2e39d7de63ab0cfd289b64d125ea03981efe2e8fd39c51f6b71a499ba6dd359"),
    ("library_035", "train", "429338bbe2e9876a2d155bd512a90a093c691e5a39324266dfbfca57ac014a3c"),
    ("library_037", "train", "be203afbf1b6aaf029d5ca59f6ec7fca6f18cd26d10d6e0f0ff20608d59e8081"),
    ("library_038", "train", "995aaf92058831bfc4eaffea8fb6876f47dbced6db7b5c4a36ed93673e92d6ab"),
    ("library_039", "train", "9cbfe10e69391007f4d5e7c0f8bb4fd3ae6a8d36c007d9c198cf57adb8f0ac15"),
    ("library_040", "train", "d3cf38e69a1b8be7191bcc4165e1dba4f763b2106fb8149ad8446ca091e4b4f2"),
    ("library_044", "train", "999bae4cdfc0fecb45f62d2f2575983a5fa1663c236abc2905d98024cb413341"),
    ("library_045", "train", "ddfe0150c74c970b521af72aa297d4206b6e1d9a94eeb1e2334b43ded8fbaca8"),
    ("library_046", "train", "4e51cbb7e6ce2738e5a2eedc55de9e55af55122801a58e5a2b392137ad9e34e0"),
    ("library_047", "train", "903c3ec8af870277f6bede16a956ae768d579209678e2238b61a2e3e83bb3666"),
    ("library_048", "train", "d099740469f6971edd603b76527c4db0136fa76df2e3980718bdaec140588598"),
    ("library_049", "train", "233c6ce9fc0908a4ae4b4b4df6e1127b3a0916b0bbd52a3e0b02228ccc9f3124"),
    ("library_050", "dev", "e0b120090495721e5ed4b4e3ab452570cbacbe45f76dcde455ed0cbf6db9fa8a"),
    ("library_051", "train", "33105c7ffe4bc8c4a3f99894083cdfed4e5955a12d698667e26494ee1a361c00"),
    ("library_052", "dev", "4a34927f454bf4a84f7ec6e21c0e69a7baf02a791c1d927982d32b73fe6e5e46"),
    ("library_053", "train", "3f3f6606aff7233f308ff3d49781de90a1e55d68d52db62503b6948e44a0aeae"),
    ("library_054", "train", "872fab7828abf254955ff43d0f3d3c4edcd30a345166e158b7040ede87450936"),
    ("library_055", "train", "a69be9ad9b42c651e3ea1d9271a5d966f407ce0c278d0da9531e1c14197b5a5c"),
    ("library_056", "train", "62c646473a75749fdbd6c57f2b12c56a46ef500b63526c26fddfb7b0956648fe"),
    ("library_057", "train", "4cda2ace3da8c13e27aceac7bf4c18c600df7e33b86ccd3b61f93f3ab7d48c0f"),
    ("library_058", "train", "9e57e437bab93687037bcc12041fe8db25136670487113dbbaeea9da7e814145"),
    ("library_059", "train", "4a6e6295e55527cf06156305ca0c297f6a7297c44eee7e20469234f0dd5fd6ab"),
    ("library_062", "train", "5347f12cc332e54bfdc6f138a26daa4f04a43fa921eb63daa47dbcc0d7ba37e9"),
    ("library_063", "train", "f3475a45c00d994f4aaad803ce7cb2596dc003b6ada1e13a29aa1c596ea1e2ba"),
    ("library_064", "train", "33c4db39b0c0238b0584fee2f8160c37ef599993f5217851cb12b47ba51abd3e"),
    ("library_065", "dev", "fcab607aabced1e3ebe068009c4145875da9440f365a16613e1c6e3e2c2b5f02"),
    ("library_066", "train", "19b33189c7694478e528e9c00b68a7ee39edaac09c28cca00d0a704e1594d6ec"),
    ("library_067", "train", "c21a76726696f62be43a8e8679897e5544eb554bd21909d8736a2379174d5c0e"),
    ("library_069", "train", "c09646b91b3cc0d7d74b113bfce72f8c74dbda7ccdfd4f23b075d5f39cb47823"),
    ("library_071", "dev", "f4d02263119227009943d08a8dafe3d95375284399029b824b752551486c455e"),
    ("library_072", "train", "29bd3ee7eeccf8b8ab0fd5ff55494197b088c0cbcc1ff1201d274a8a08e367e9"),
    ("library_073", "train", "04c5efcd3eccc28ec0115fefcb8d2642683bad169257c2b57c425cc61152d29e"),
    ("library_076", "train", "1349395dba97362b9730c7b9cb0b5657e5a52ee033e3c2dab74f63241510c063"),
    ("library_077", "train", "9e20b5e0a2d5f3864cac7551f821a8bb14b9561199e589d11c5ff5eec823ee33"),
    ("library_079", "train", "405d2167ea7e215da7a3946ceda6fa074d008d92929da9772603261627c46b8c"),
    ("library_080", "train", "bec26f31c314a9bdbb933d58385ddffaeb3db675f82d02730df276d945b34733"),
    ("library_081", "train", "8413340c96939f75b85e8eca32e4fb7273146b8dff0261c435b5c36b1ed3f845"),
    ("library_082", "train", "4b8466a105f9c365a76f15a380cdb90ab97f87bf5de411de7a3807019155c56e"),
    ("library_083", "train", "f689d9b73490a683cacf22172c4203d23057efa1ed57424678ee7808c691cb1c"),
    ("library_084", "train", "6a9ac37a52e3a875833fe13dbe8298895917a7de543a5f1628a1a14f38625290"),
    ("library_085", "dev", "307a447d3819beca1917a69df464876febcc093cbc9065eeccd757cd48e3fbf8"),
    ("library_086", "train", "88cce65c423c19b9b6ea89444ea26d5b02266d2ea3f652ebfa9b92f5a0e4e71c"),
    ("library_087", "train", "275e6a6611b694f0d718513dce5fc4e2b9a6236b3ee68f4e5538e7b5741ca76b"),
    ("library_088", "train", "9ef763e54f0965624f17c8cbbf754bd933539b849d7f7ad83142ebbb79644f17"),
    ("library_089", "train", "bdd28d99e978b691a4f6f55b65891ec51c9949a5acf1d0228e8d08027d2fdde2"),
    ("library_090", "train", "358c6fe30f239db57e8e96e3d0599042901ec4598ffecae1078bb54c9fa68d26"),
    ("library_091", "train", "fda1ef76c6e4f1cd27f6d3812eb76416da06dda43ffbca706a946c51540920bb"),
    ("library_092", "train", "8bbff46e4345a2a5b1feaf31cafa1b0d01d9ad74a1d6c1ea7ca597e3b6f49541"),
    ("library_093", "train", "3e4d6d01a3a053706e8bdb2d51647a7b1b2309dc223af7c1ef28ab1a822421b9"),
    ("library_094", "train", "ab7f5a2a612825f958b62e74791a8c84c7936c04240d271ade30d8b2e82cd5d1"),
    ("library_095", "train", "7ca12cb535d77553e5bd01f963dc7fbb0e144aa138ab097d9c5251992550edef"),
    ("library_096", "train", "28f37c9d1a96ae85b894be23700d28688d8d7dc4f9744437a8f308d28246b351"),
    ("library_097", "train", "1a8e2c8ddd2736e47d263fec6240260e1e43c541192b26437181a7b1f71589f3"),
    ("library_098", "train", "8bab627462f17330e4319222ddef2316ecc460806b3bc8fe4117532b41e7e693"),
    ("library_099", "train", "11a1e493d901bcd13e028bc173aff6872bc9361a8e3faec8f2fcf179dad07ca5"),
    ("train_001", "train", "8d69053727ab98fc4cd89e548914f4601dc747efb0f15ac7693ef060e00bbed8"),
    ("train_003", "train", "d0043593827f75eabf4cc03479a2320f5ee90bca392bcd6a1ca46c05a7f396fa"),
    ("train_006", "train", "d2a6b3c5b78c440077a5f06d8a9454eb6afb2ec471225daf7e83e97afb8406dc"),
    ("train_009", "train", "9070f7173b165be2dc29f7159640f34b8bee4b423c9a8fd31f26c36a99c6b768"),
    ("train_011", "train", "9df5819b1f81322c49e3aa3dda14fcfa8641fe67a8b996f9e683a5e759b5c6b6"),
    ("train_015", "train", "0b823277c7de3f36c49bb6be923b2d539b144adf4e03d945d024eb01ea637391"),
    ("train_016", "train", "737771d0623dde945e876ccf7dac8cb1701854e598bc6951c4bac858a288d070"),
    ("train_017", "train", "6c7990e3501b28cb31191277a91955f92b76bf80bcfc3808249b0c1c5df04272"),
    ("train_018", "train", "d63c4d2f482445d095a82123eef573dcd30eb21d4ac28dcd355251e2479049f5"),
    ("train_019", "train", "3e57327f4ffd58f7c1d37c22c4852272dc07cc6146971bc533fbc608b9abff16"),
    ("train_022", "train", "200f6e9c0eb1c5b52efe62ffdf5a8164f18cf77de06dfd1efa9d6040f9e6a63f"),
    ("train_024", "train", "83f7dc9e39f5d55c689f5ab881f5fd6b90e2deb09c4ec6c975dfa78b854de067"),
    ("train_026", "train", "b8365f82e3cc315172b930b47b1e2dce46a8173f2eb2514d4c00b1438d39d96f"),
    ("train_027", "dev", "e4c17949526da98acbff238285acb3ef6c28faa3abb4c69c929939ce5aab4da6"),
    ("train_029", "train", "85b2cb97e06b7d823865977adcf18181c7d4a7304c8402eff12eabb476534589"),
    ("train_031", "train", "6b08d27329cc646d4a6783034e11d55addb55ef7476676cb1352eb79e30682e4"),
    ("train_032", "train", "dc1e4a9e95ac7c73badfc3abeb0eb87428435496894a6b573f36fa311d1d9136"),
    ("train_033", "train", "8d2c578786c92736dba86fb870f31053914fb1b6ef5b03ac509da3d08f560361"),
    ("train_034", "dev", "ecd20aa03e367235271640b8c45dbd7b862e50b3e10ce8f1ca1e1cb0ea17938b"),
    ("train_035", "train", "c86a2268f2c84057ea3fb4af2a5402b0c403337e102d185de0ad1ca9d0c10326"),
    ("train_036", "dev", "778adb3055b277d67dcc8e38e2257134772776cd53656d2b92ef28a10db34f78"),
    ("train_037", "dev", "e76705fcc91a3e8bbe3af4db69f1499bbc48a14de022a30ea1e8175129e7e058"),
    ("train_039", "dev", "6e0632882dbfa5460de941898d9dc18976bd3a53898f84d4deca1ee1f1852779"),
    ("train_040", "train", "721c45a6bc67813b00b1b6298b575f8e577284f951e6cf70719a18f7ae6f5226"),
    ("train_043", "train", "b76d0bcf2b4135a0cdc347ab0f527ab762d80773d7e723f567854e85ffdaa7c1"),
    ("train_044", "train", "9e87be89b196f9f5ad6d7419e4dab101a97919098de2a91d91258e37ec0b1c2a"),
    ("train_045", "train", "25536e3b03a9b9fd53301c3e1850b693c45c3ce7f80223763a7afcda8b9320fe"),
    ("train_046", "train", "4396886675bbebe05bc8374cbc0b25b71207a18d3539a8249e9d1f1367345e0e"),
    ("train_049", "train", "c114aaddae594f394c99e8a011ff9c50dd8f92a72201b3df34d663cffff846d7"),
    ("train_050", "train", "e4bbeaa891c195118c754d8a9728ea392bf015de80f8a6a981b41bb6967aae52"),
    ("train_051", "train", "35f78cac85cdab5ab3f452e4b9cf4d2c2770b3c236b5c28adce6af7dd3608fda"),
    ("train_052", "train", "2508d63f72ee3667815936522bbf9871ada8c8b7ff5a81bfea3d51016f39ed0a"),
    ("train_053", "train", "cfffa4f78b60a43d49976d268831ae107aeab878414bea4b7fc4be3c6fb3474e"),
    ("train_054", "train", "3bda695957b8413bebee8fdb131b6e6d8f6cad2d184c74a77827f1c767b64453"),
    ("train_056", "train", "f37f6d8cd696a27d6b32784c0488c523d00002aef201e67059916fc1e3578a2c"),
    ("train_057", "train", "27031bb5a6032f3e8e47cf2fc92c1cb8bd50c10790aedb4cf8fa2eb22bd9bc53"),
    ("train_058", "dev", "1b45e3249e199758559036b90916565a38afb6668f7808cc74becc0670b01c74"),
    ("train_059", "train", "cfa08367e7a328552c0f8b902ff711f7102327de16ebc7d20f51d6de5eb6d73a"),
    ("train_060", "train", "dc231b174e78f7ac5af6bcfddf3756fac7320d07be6365ce45f160f07c8eed05"),
    ("train_062", "train", "1cbddaae2d96c1bc6710782ebc3e21a86e4d91e24e9a90d84f76fcb74280096e"),
    ("train_064", "train", "9e1f34ddbe9311d3c46fe02195489e5939e5708280b5322ad81e9c4d4a8819fc"),
    ("train_065", "train", "3a45d8bce3a9633ea90d0f01254316ff24f02c87cc897fa49dc13acef11d0a36"),
    ("train_066", "train", "e112882ffea8bedebcdf5331523d0183be1cb66fbaa10f4d66660452cb739681"),
    ("train_069", "train", "28967703aefdfaa32e9ff891ff8a46dd894328bf0285e8f4a0729b0ec2e88091"),
    ("train_071", "train", "4a60258ce03920e7adf5f1671aab857aae82161833be083dccab2d9ea8f040ad"),
    ("train_072", "train", "192209a233e3cf412864b01a4087624d06d270727c4f3c272ca4785f72cd5021"),
    ("train_073", "train", "75cb9497284a0f0393a6f2f839097d9f8ff811a2c0fd50097c15ac869ac5c7dc"),
    ("train_074", "train", "38fb2ec4fe14ba897a0d856e2affa3085435f6e673aa10b34ab37bcaed77f4eb"),
    ("train_075", "train", "c94b9edf479078c142939104321e562b887f83c826ed7ea5e8a5844e1a9c3d20"),
    ("train_076", "train", "bd06a0c786ddff8cf871e21da2ec14cb513844f1289226311dc6f3ca169f50b1"),
    ("train_077", "train", "d9147c3761d38ae1a6a4b9b0642d2d194cbe488ec7d36d6bd54693ed0ee0381b"),
    ("train_078", "train", "981d4fafe5cc9af72eaf7dac5280a63728d2be577398e2aed97a0252c472797a"),
    ("train_079", "dev", "6d3e3e2adddc76c29d5314ee7ea691da07ffddb86193c25dbcb6ce74d30340a1"),
    ("train_080", "train", "df3731948d12dd29d4a8359fc1bd8a228516ebe78f098c6414d9a6a44fafc0a9"),
    ("train_081", "train", "ff54029c8d1b23893693b8d3e1d521a3f52b576222ec969d38db8e5dcc4f94c6"),
    ("train_082", "train", "a6d2e602fd8099c197683119a5d567166929588be1d1315581e8d1ee5e62cb4c"),
    ("train_083", "train", "74f1646f7ef21d34f8e4c7fa9178675277be6505fba58e404dde4d2fa064fff0"),
    ("train_084", "train", "7e5eac2cc5f9090ff26e3fcaa56570686b6862ec0480f027986e82444876a9b3"),
    ("train_085", "train", "a895d95092f3bbf736d9dd2a83dc2a53a7d73214189d406e064398049a80b0e2"),
    ("train_086", "train", "a1bf7e6b7dd8c604b75a92c4861d2f4fecb54be8ef2625ed2c6c7a3264c63aa6"),
    ("train_088", "train", "eff63385bfb5e25a08094c4d61bfffa0f917f8558fa3c31edeb212cb8f1fc32e"),
    ("train_089", "dev", "39b63efd4950091f0849638f99a6ac5b2552b5693112841aba1ea06d479ed915"),
    ("train_093", "train", "c2536be2569389930e9180bb71c5420a6f5a873d2f15c9fa06e84ec6782da2fd"),
    ("train_095", "dev", "129b716a86c963341842e720299e2fa52f40042151de04614e7af54d05d3b18e"),
    ("train_096", "train", "64dce0d9cf5c905696e850cef875c80faf06fe6d8153a096d95e13a1c198f463"),
    ("train_097", "train", "9a00019dafdd254ad608249714354cd32dc3abb4eb3c74480175b0c019593e81"),
    ("train_098", "train", "4b83d065a147da4557ac8adc8155d898f52e4b74c6712a915651bac6f8e242d3"),
    ("train_099", "train", "6126162e12f571115d3110a453ef44598976a0cfbeda4e00b7550a197bc70398"),
    ("train_100", "train", "46ecdede1a37459c6b767f270b24df2e0f1a7f0cf00ac06b462a14e29abdb5f5"),
    ("tree_001", "train", "903690a7b56724468590fcaa39fd5f90d786468d4cd7dd6637125e34f4ed722a"),
    ("tree_003", "train", "c821ed0a236aaa4a45b7a847611f191498ab03cbf347e96b729758514f1eac74"),
    ("tree_004", "train", "1cd6fcc6868bc24bf26dbfce3e54a9df5c463b3379343abb75979a78148743dd"),
    ("tree_005", "train", "ac3be0f6e87b528633f6d44368a3e0bc87e3ca6cc496dfad9479a8e36ee82751"),
    ("tree_006", "train", "ffea9a7cea34c6822063ff3cb7c3e64955aaa20627d4c50d38a79da432b5176e"),
    ("tree_007", "train", "2ded409acd4395ada88acfd856bbfaef75640b619dca7abdfe9590dafc61e08e"),
    ("tree_008", "train", "07ad6584d73dd31d3f7d7067aa88cbc4c15a86d7964a2942f0dc71a5df58c858"),
    ("tree_009", "train", "6e42c350e28352416d0aef0e962fa1603190ab979019e6a3ff8b74347473d4d6"),
    ("tree_010", "train", "4cb7720ff2278c6be25f2311eccf37965b19d772b666446438cb659a585558cf"),
    ("tree_011", "train", "4a803d898d1492a4a1cd0b9da63cf38328cbee39db21817418d8d0d0b5d01d43"),
    ("tree_012", "train", "cfeb64a1a65cf6739e21fdb510c1e91713ce56c1c1cb57721f5a2e571926c855"),
    ("tree_013", "train", "0b5076121e023d7c3339a2bff6da3784ef8aab23928eb10301e2cd023d9ddde8"),
    ("tree_014", "train", "6e0efe06e273fd7082220a31f69b0a33ba10a33097a01e5bdb2b9df43b056af7"),
    ("tree_016", "train", "c2218b170b667e60daec3484633232ccf6fc4e1a0dc5dd6875777f19940f9d07"),
    ("tree_019", "train", "6b17a6e510aabf5082594e62c8e9d2ff335ed6e5bc1b1b137199a693ef331d2e"),
    ("tree_020", "train", "d6afc78f885e79d1171fc834538c58de84cd36a9f4b4221ab1bfdedc1ea7444f"),
    ("tree_021", "dev", "3105f96fcdbf62b55438c9edc399328a6a35a75bcb2e78ca3487d004b4c47290"),
    ("tree_022", "train", "93ef04515d31cb2a3694b7b7aebea5e74d2565750223e61255842e01e41df7eb"),
    ("tree_023", "train", "77dbaedc6c1d00913edbd31a11c4db79b6c9bcff16f4142ede5e00d6526fa43b"),
    ("tree_024", "dev", "f5aa52936567e55cec7eab40b040d43fb4223a414fa84f97b4ab34097742842e"),
    ("tree_026", "train", "e0cd19dfa94346f1d6160081e40e023713b84713b26f9573d017d9c50628e10d"),
    ("tree_029", "train", "ddf94cf490fef533c49607a21c43dff54f34a2ed6410800a9b58c1ec2cca9f5c"),
    ("tree_030", "train", "d530d5bf160d72ba1d9f0606390f621101aab23e4fff5499ed5d38a0a4e493d1"),
    ("tree_031", "train", "e095f65e38d4a4036513d9db5f78a69f8c28e5dc4c2bad3eea45b18a1d39b930"),
    ("tree_032", "train", "d06d1509fd64b225cf247ff852992ff6750ad9d2b2612512b79776a4e385585b"),
    ("tree_033", "train", "0c3677edae5f52c4f75d83e291414a4f4b0c960a7236f7b755ee2184f13d1340"),
    ("tree_034", "train", "21fa9ca139277c44f2cc7af9b3618d09868049f29749365520f27b4ec747e74a"),
    ("tree_035", "train", "aa49e730b42dc72c1fe73d30536428e39d06deaa4690eeebd143c59a01cb394c"),
    ("tree_037", "train", "11a46019dae15e10eb2073c175edbc3f94f9830f8ea372dc0bcb39f1cbb34ce5"),
    ("tree_038", "train", "2aaf0f73d040b3ee5757599d38243de89e52a13d43d5ba75d844a764dd1440f2"),
    ("tree_039", "train", "f0471f31df0e34ab5875a1757d2cd81e9cb58666945b50ef9f1bec68dd91a41e"),
    ("tree_040", "train", "54952a6d335e7c531ca4a64977d9da5ccb08c46427205ed3664b426888a096e1"),
    ("tree_042", "dev", "0970b084c8d12ee6506f2d1c2314cc87b85f9337186734ed5001846baa522056"),
    ("tree_043", "train", "949c978ddb78567cdd1dfabcd0ba12875336ca07efe166554d73b0574189d9c1"),
    ("tree_044", "train", "badd3729886c55b2687207509f0f060f6167268d3080a84393a86637abee3ac5"),
    ("tree_045", "train", "836d4e8197afe86e07489ee889fa3fc7a8ec8007c00d61d31010fb04b5042b97"),
    ("tree_046", "train", "1335b93aada74b837deb622dda1bbeeaaacdd0c24df3eadf9a1db3412df5a248"),
    ("tree_047", "train", "9c9e033640bd9f25c66a739bfe21b0cf85f2afb19a453b53d0460b5938819cd0"),
    ("tree_050", "train", "411cc26737a19a17803c7f4facabfe9e1db15923743fc1f63c442259364c3e01"),
    ("tree_051", "train", "1ca5de3085e52f144e075437dc6a1fae6a12bd1cce2fa014c3904f948417748d"),
    ("tree_052", "dev", "7d5fca94b80ba778524d2e2671e73820b21479f051f0892363611810f666c0bd"),
    ("tree_053", "train", "55c18891a212f1edbef2d0697641e5349b51ceb5234805a751dff9a417ff8fa3"),
    ("tree_054", "train", "4ce746025807bbdc2c499c7c4e471f12026036795b9a58a351677b90943d8e9f"),
    ("tree_055", "dev", "1cbc5f41979a454c140b9849bcd362281b461526c9f03685aec89e2a584647b8"),
    ("tree_056", "train", "08b48fde2cfe6ca3fe4fad589c6aa93864d3f799f128679e5c512f4f9e4a300d"),
    ("tree_060", "train", "73bf07e6ede3e2771444f39d0d6f743ce8fe20e69b0b61eff4e9b78ac0beef47"),
    ("tree_061", "train", "334cc0357719f769934c1858be71d2751e769c4b5d68f665d97c41f9bcac3c54"),
    ("tree_062", "train", "3a627b3597149b55719db37256ef2f06f139bb1b2b5b2d04b3e46da93d39e6d7"),
    ("tree_063", "dev", "cc28a20ee291cd6ccd4ee188e7963d219accecc818c0c83e99346ecde1e724a5"),
    ("tree_064", "dev", "452e7b5865213ad7e3cdd5f313065a54219b6f42055cfb4e7a58c5a7880f867e"),
    ("tree_065", "dev", "add8abd3cbba518ecc51cd674497ea22b5bc36f1f66d90c8e19fc1517fb527b1"),
    ("tree_066", "train", "6ffdf9faaf3045f36797f07dfba208092fd0c1f17d1b194dfb9b3f7c62b1becc"),
    ("tree_067", "train", "f7d30f348897e1743f954a96923549b6de80ebf4b220a53eaa774c3a55e04044"),
    ("tree_068", "train", "1b8fa4bb9b2bab35f1acefeed96e40d5ecd3773a41795921b801f80ae63c65f7"),
    ("tree_070", "train", "155e8d27faa208899c83daf9c24f53e8a67c9f0e38a14b02093d6c4a796dd6d6"),
    ("tree_071", "train", "cc4b4b3fd449f1fa02f35a5a60a349913d46ee7bc882e9445a8ed2b8c8bac467"),
    ("tree_072", "train", "824009013a2bea6050ec1aaaf1bc94a5267a5ae3dc29854e0e02bd0cd2ce5dad"),
    ("tree_073", "train", "e246221078af9e72d82d5f935d5d75ffbd1ca4898bbdc8047940255b61507653"),
    ("tree_075", "train", "f404ce39020334ca914ff316803dd543d4eb772b2a19ac56a819204e689624e4"),
    ("tree_077", "train", "060e8e3126e46c6a2183d07509f5205dfbf89c259a6c154851520625d63edf54"),
    ("tree_078", "train", "c48d9db19436d648fe3b323d5996f20c6afa1a4165519bb67c6be9779af0d817"),
    ("tree_079", "train", "aa8606688d8f572e8f160ac25b11ada3a612a5538129484a065cd94b113fa184"),
    ("tree_083", "train", "069c47f3009436fe468861d628468618fa2c5fc559b98e66a5015f3f524c03f0"),
    ("tree_086", "train", "f1a3cc499cbb93d3707b121570a2bcb21ad2452844a97457b05d33ab40e03683"),
    ("tree_087", "train", "573977a842e66431be69b1b2edca868947039ab675d8144ebde8b9ceba104469"),
    ("tree_091", "train", "7bb813cca788f6a1a720999b3b9ef59268b2ab0698b4010a91e998517e668aec"),
    ("tree_092", "train", "436753a7c6ed13de542522730d75b93cd8e758400fa39c6aa3d1d31ea426c49e"),
    ("tree_093", "train", "33fab69b65f4a3cd21aa6e36216e2ac7bc1e2a320da8f4de85942c6af133ee0c"),
    ("tree_094", "train", "a64976da7a60ef1270319ae6a94d654b4a8d6cba91034e7a67e9c00e3e64c762"),
    ("tree_097", "train", "5e5e59cc86b0c368d96f5c43fdc3271f22584b51bdd3a01ccb0f00dce848a855"),
    ("tree_098", "dev", "f5bb5bdecce6dcdd5f7234dbd778a37486628761079688d7c4f158baa9394fa7"),
    ("tree_099", "train", "797255a4d47e5eb7b323798f3726b2386cc71f65daac7b20871241a99cc9b326"),
    ("tree_100", "train", "0b5e83e375d5f66abaeaf995b7fafc9905cb6b62633313404484e156ff53aa24"),
)
# The mirror's test sample (verbatim copies of these test stories): (story id, sha256).
SAMPLE_TEST: tuple[tuple[str, str], ...] = (
    ("bath_005", "b9ebe6d6a16eac0741f7ce94b63f57e825d53e71c694d4960d1b4b0a512e9c93"),
    ("bicycle_002", "c160f080298bac2482832eb82dbb55e3751a32ba79dcd7c8694a8e9a2ebfe25e"),
    ("bus_008", "17e473ec49eaddb9c139dc386fb9d2adc700269d1201f02e692088ac06f15311"),
    ("cake_005", "13b07821773cc1cc62a402720004a2100d228c1b1d356a479f5f2941381047c2"),
    ("flight_015", "ef439a2f388695d8919accc56dbf06538b14d5abb42b78e5d435460d12e111f3"),
    ("flight_101", "2820a31165a99c44244201a1c9284614d0a00964fc79c29a0669f19804c0f4fc"),
    ("grocery_099", "4fd6c1ead3e591f9bf43f7ceef33147f266ae5d4058b1ea404f552a5f7a54703"),
    ("haircut_081", "f49b7229eb6bfd09dc1104bdff5b3dd619b3a331017ea92f03ea8fd372df91d6"),
    ("library_078", "115b1c96183be30ee47e39b913fa1d1a212ec888622b3949280aac8de65408b1"),
    ("train_091", "532d2de4cd789b668ef91aaf97d25f21cba11306e45a546fd220adab7f4c25fa"),
)
# The 182 test stories of clean_data_split.json (held back from the mirror), by scenario.
TEST_IDS: dict[str, str] = {
    "bath": "005 010 019 020 025 036 042 045 054 058 073 078 080 083 086 091 094 095",
    "bicycle": "002 003 009 010 014 020 033 035 038 045 057 062 069 074 077 081 085 088",
    "bus": "008 027 032 034 037 041 044 045 047 050 062 064 072 078 080 081 086 088",
    "cake": "005 010 011 026 029 044 045 062 063 066 077 079 080 084 088 095 097 100",
    "flight": "015 023 025 027 028 030 036 037 038 040 054 055 060 062 078 084 093 100 101",
    "grocery": "005 008 010 012 020 026 028 032 035 043 047 054 063 073 081 085 089 099",
    "haircut": "006 008 009 014 017 024 030 033 037 040 044 052 058 067 074 075 080 081 098",
    "library": "004 016 017 020 026 029 032 036 041 042 060 061 068 070 074 075 078 100",
    "train": "007 012 013 021 023 025 028 030 041 042 047 048 055 061 068 070 091 094",
    "tree": "036 041 048 049 057 058 059 069 074 076 080 082 085 088 089 090 095 096",
}


def _test_story_ids() -> list[str]:
    return [f"{sc}_{n}" for sc, nums in sorted(TEST_IDS.items()) for n in nums.split()]


def _story_relpath(story_id: str) -> str:
    scenario = story_id.rsplit("_", 1)[0]
    return f"corpus/{scenario}/{story_id}.xml"


def _story_url(story_id: str) -> str:
    return f"{RAW_URL}/{CORPUS_COMMIT}/DynamicEntity/InScript/{_story_relpath(story_id)}"


def release_url(name: str) -> str:
    """The raw GitHub URL of one file of Modi et al.'s release at `RELEASE_COMMIT`."""
    return f"{RELEASE_REPO_URL}/{RELEASE_COMMIT}/data/taclData/{name}"


def release_sources() -> list[Source]:
    """Modi et al.'s release: optional (a user without it gets the rule's test slots, and the
    developer mirror holds the full targets file back), each pinned by its sha256."""
    return [
        Source(f"{RELEASE_DIR}/{RELEASE_FILE}", RELEASE_SHA256, url=release_url(RELEASE_FILE),
               optional=True),
        Source(f"{RELEASE_DIR}/{RELEASE_SPLIT_FILE}", RELEASE_SPLIT_SHA256,
               url=release_url(RELEASE_SPLIT_FILE), optional=True),
        Source(f"{RELEASE_DIR}/{RELEASE_SAMPLE_FILE}", RELEASE_SAMPLE_SHA256, optional=True),
    ]  # fmt: skip


def declared_splits() -> dict[str, str]:
    """story id -> split, as declared by this module (the split file must agree)."""
    splits = {sid: sp for sid, sp, _ in STORIES}
    splits.update({sid: "test" for sid in _test_story_ids()})
    return splits


def sources(cfg: dict[str, Any] | None = None) -> list[Source]:
    """Split file, README, the 728 train/dev stories, the 182 held-back test stories
    (optional; sha256 known only for the 10 sampled ones), the 10-story test sample and Modi
    et al.'s referent-prediction release (`release_sources`)."""
    sample_sha = dict(SAMPLE_TEST)
    out = [
        Source(SPLIT_FILE, SPLIT_SHA256, url=f"{RAW_URL}/{SPLIT_COMMIT}/data/{SPLIT_FILE}"),
        Source(
            "README", README_SHA256, url=f"{RAW_URL}/{CORPUS_COMMIT}/DynamicEntity/InScript/README"
        ),
    ]
    out += [Source(_story_relpath(sid), sha, url=_story_url(sid)) for sid, _, sha in STORIES]
    # No checksum is published for the test stories; the sampled ones are verbatim copies.
    out += [
        Source(_story_relpath(sid), sample_sha.get(sid), url=_story_url(sid), optional=True)
        for sid in _test_story_ids()
    ]
    out += [
        Source(f"{SAMPLE_DIR}/{_story_relpath(sid)}", sha, optional=True)
        for sid, sha in SAMPLE_TEST
    ]
    return out + release_sources()


# --------------------------------------------------------------------------- XML reading


@dataclass
class Label:
    label_id: str
    start: int  # token index in the story
    end: int  # exclusive
    name: str  # participant type, e.g. ScrPart_bather, NPart, No_label
    line: int


@dataclass
class Story:
    scenario: str
    number: str
    line: int  # of the <story> element
    tokens: list[str] = field(default_factory=list)
    sentence_starts: list[int] = field(default_factory=list)
    participants: list[Label] = field(default_factory=list)
    chains: list[list[str]] = field(default_factory=list)  # participant label ids, file order
    events: list[Label] = field(default_factory=list)  # event labels (ScrEv_*, UnrelEv, ...)
    pos: list[str | None] = field(default_factory=list)  # per token, the XML's <pos type>
    dep_head: list[int] = field(default_factory=list)  # per token, its <dep head> index or -1
    dep_rel: list[str | None] = field(default_factory=list)  # per token, the <dep type>


def _refuse(path: Path, what: str, parser: expat.XMLParserType) -> None:
    raise DataError(path, f"{what} not allowed (no DTD is read)", parser.CurrentLineNumber)


def _label(path: Path, attrs: dict[str, str], label_id: str, index: dict[str, int], line: int,
           kind: str) -> Label:  # fmt: skip
    """A <label from="S-T" [to="S-T"]> as a token span [start, end)."""
    first = attrs.get("from")
    last = attrs.get("to", first)
    if first is None:
        raise DataError(path, f"{kind} label {label_id} without 'from'", line)
    for ref in (first, last):
        if ref not in index:
            raise DataError(path, f"label {label_id} refers to unknown token id '{ref}'", line)
    if index[last] < index[first]:
        raise DataError(
            path, f"label {label_id} ends ('{last}') before it starts ('{first}')", line
        )
    return Label(label_id, index[first], index[last] + 1, attrs.get("name", ""), line)


def parse_story(path: str | Path) -> Story:
    """Read one story XML. Any defect raises DataError with the file and 1-based line."""
    path = Path(path)
    data = path.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DataError(path, f"not valid utf-8 at column {col}", line) from None

    parser = expat.ParserCreate("utf-8")
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.EntityDeclHandler = lambda *a: _refuse(path, "entity declaration", parser)
    parser.ExternalEntityRefHandler = lambda *a: _refuse(path, "external entity", parser)
    parser.SkippedEntityHandler = lambda name, *a: _refuse(path, f"entity &{name};", parser)

    stack: list[str] = []
    root: dict[str, str] = {}
    root_line = 0
    tokens: list[tuple[str, str, int]] = []  # (id, content, line)
    sentence_first: list[int] = []
    raw_labels: list[tuple[dict[str, str], int]] = []
    raw_events: list[tuple[dict[str, str], int]] = []
    event_ids: set[str] = set()
    token_pos: dict[int, str] = {}
    token_dep: dict[int, tuple[str, str, int]] = {}  # token -> (head id, relation, line)
    raw_chains: list[tuple[str, int]] = []
    seen_annotations = False

    def need(attrs: dict[str, str], key: str, tag: str) -> str:
        value = attrs.get(key)
        if value is None or not value.strip():
            raise DataError(path, f"<{tag}> without '{key}' attribute", parser.CurrentLineNumber)
        return value

    def start(tag: str, attrs: dict[str, str]) -> None:
        nonlocal root_line, seen_annotations
        parent = stack[-1] if stack else None
        line = parser.CurrentLineNumber
        if parent is None:
            if tag != "story":
                raise DataError(path, f"root element is <{tag}>, expected <story>", line)
            root.update(attrs)
            root_line = line
        elif tag == "sentence" and parent == "sentences":
            sentence_first.append(len(tokens))
        elif tag == "token" and parent == "sentence":
            tokens.append((need(attrs, "id", tag), need(attrs, "content", tag), line))
        elif tag == "pos" and parent == "token" and attrs.get("type"):
            token_pos[len(tokens) - 1] = attrs["type"]
        elif tag == "dep" and parent == "token":
            token_dep[len(tokens) - 1] = (need(attrs, "head", tag), attrs.get("type", ""), line)
        elif tag == "annotations":
            seen_annotations = True
        elif tag == "label" and parent == "participants":
            raw_labels.append((attrs, line))
        elif tag == "label" and parent == "events":
            event_ids.add(need(attrs, "id", tag))
            raw_events.append((attrs, line))
        elif tag == "chain" and parent == "chains":
            raw_chains.append((need(attrs, "elements", tag), line))
        stack.append(tag)

    parser.StartElementHandler = start
    parser.EndElementHandler = lambda tag: stack.pop()
    try:
        parser.Parse(data, True)
    except expat.ExpatError as exc:
        msg = f"malformed XML: {expat.ErrorString(exc.code)} (column {exc.offset + 1})"
        raise DataError(path, msg, exc.lineno) from None

    for key in ("scenario", "id"):
        if not root.get(key):
            raise DataError(path, f"<story> without '{key}' attribute", root_line)
    story = Story(scenario=root["scenario"], number=root["id"], line=root_line)
    if not seen_annotations:
        raise DataError(path, "no <annotations> element", root_line)
    if not tokens:
        raise DataError(path, "story has no tokens", root_line)

    index: dict[str, int] = {}
    for i, (tid, content, line) in enumerate(tokens):
        if tid in index:
            raise DataError(path, f"duplicate token id '{tid}'", line)
        index[tid] = i
        story.tokens.append(content)
    for a, b in zip(sentence_first, sentence_first[1:] + [len(tokens)], strict=True):
        if b <= a:
            raise DataError(
                path, f"sentence {len(story.sentence_starts) + 1} has no tokens", root_line
            )
        story.sentence_starts.append(a)

    for i in range(len(tokens)):
        story.pos.append(token_pos.get(i))
        head, rel, line = token_dep.get(i, ("", None, 0))
        if head and head not in index:
            raise DataError(
                path, f"<dep> of token '{tokens[i][0]}' names unknown head '{head}'", line
            )
        story.dep_head.append(index[head] if head else -1)
        story.dep_rel.append(rel)

    seen_ids: set[str] = set(event_ids)
    for attrs, line in raw_labels:
        label_id = attrs.get("id", "")
        if not label_id:
            raise DataError(path, "participant <label> without 'id'", line)
        if label_id in seen_ids:
            raise DataError(path, f"duplicate label id '{label_id}'", line)
        seen_ids.add(label_id)
        story.participants.append(_label(path, attrs, label_id, index, line, "participant"))
    for attrs, line in raw_events:
        story.events.append(_label(path, attrs, attrs["id"], index, line, "event"))

    participant_ids = {lab.label_id for lab in story.participants}
    for elements, line in raw_chains:
        chain = elements.split()
        for ref in chain:
            if ref in event_ids:
                raise DataError(
                    path, f"chain element '{ref}' is an event label, not a participant", line
                )
            if ref not in participant_ids:
                raise DataError(path, f"chain element '{ref}' is not a participant label id", line)
        if len(set(chain)) != len(chain):
            raise DataError(path, "chain lists the same label twice", line)
        story.chains.append(chain)
    return story


# --------------------------------------------------------------------------- normalize


def _read_split(path: Path) -> dict[str, str]:
    """story id -> split, checked against the ids this module declares."""
    if not path.exists():
        raise MissingSourceError(f"{NAME}: missing {path} (run the download stage)")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(path, "not valid utf-8", data.count(b"\n", 0, exc.start) + 1) from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(path, f"malformed JSON: {exc.msg}", exc.lineno) from None
    if not isinstance(obj, dict) or set(obj) - {"train", "dev", "test"}:
        raise DataError(path, "expected an object with keys train, dev, test")
    declared = declared_splits()
    out: dict[str, str] = {}
    for split in ("train", "dev", "test"):
        ids = obj.get(split, [])
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise DataError(path, f"'{split}' is not a list of story ids")
        for sid in ids:
            if sid in out:
                raise DataError(path, f"story '{sid}' is listed twice")
            if declared.get(sid) != split:
                raise DataError(
                    path, f"story '{sid}' in '{split}' is not a declared {split} story of {NAME}"
                )
            out[sid] = split
    return out


def _mentions(doc_id: str, story: Story, cfg: dict[str, Any], stats: dict[str, int]) -> list[dict]:
    multi = cfg.get("multi_chain", "all")
    exclude = tuple(cfg.get("singleton_exclude", SINGLETON_EXCLUDE) or ())
    labels = {lab.label_id: lab for lab in story.participants}
    rows: list[dict[str, Any]] = []
    placed: set[str] = set()
    memberships: dict[str, int] = {}
    for chain in story.chains:
        for ref in chain:
            memberships[ref] = memberships.get(ref, 0) + 1
    stats["multi_chain_labels"] += sum(1 for n in memberships.values() if n > 1)
    for cluster, chain in enumerate(story.chains):
        for ref in chain:
            if multi == "first" and ref in placed:
                stats["dropped_memberships"] += 1
                continue
            placed.add(ref)
            lab = labels[ref]
            rows.append(_row(doc_id, lab.start, lab.end, cluster))
    next_cluster = len(story.chains)
    singles = sorted(
        (lab for lab in story.participants if lab.label_id not in memberships),
        key=lambda lab: (lab.start, lab.end, lab.line),
    )
    for lab in singles:
        if not cfg.get("singletons", True) or (exclude and lab.name.startswith(exclude)):
            stats["singletons_dropped"] += 1
            continue
        rows.append(_row(doc_id, lab.start, lab.end, next_cluster))
        next_cluster += 1
        stats["singletons"] += 1
    stats["labels"] += len(story.participants)
    stats["chains"] += len(story.chains)
    return rows


def _row(doc_id: str, start: int, end: int, cluster: int) -> dict[str, Any]:
    return {"doc_id": doc_id, "start": start, "end": end, "cluster": cluster, "annotator": "gold"}


def normalize(raw_dir: str | Path, cfg: dict[str, Any] | None = None) -> Normalized:
    """One document per story of the split file; gold mentions from participant labels."""
    cfg = dict(cfg or {})
    if cfg.get("multi_chain", "all") not in MULTI_CHAIN_MODES:
        raise ValueError(
            f"normalize.{NAME}.multi_chain must be one of {MULTI_CHAIN_MODES}, "
            f"not {cfg.get('multi_chain')!r}"
        )
    train_stories = cfg.get("train_stories", "modi2017")
    if train_stories not in TRAIN_STORY_SETS:
        raise ValueError(
            f"normalize.{NAME}.train_stories must be one of {TRAIN_STORY_SETS}, "
            f"not {train_stories!r}"
        )
    raw_dir = Path(raw_dir)
    split_of = _read_split(raw_dir / SPLIT_FILE)
    ignored = set(MODI_IGNORED_STORIES) if train_stories == "modi2017" else set()
    stats = dict.fromkeys(
        (
            "labels",
            "chains",
            "singletons",
            "singletons_dropped",
            "multi_chain_labels",
            "dropped_memberships",
        ),
        0,
    )
    documents: list[dict[str, Any]] = []
    mentions: list[dict[str, Any]] = []
    per_split = dict.fromkeys(("train", "dev", "test"), 0)
    sampled = missing_test = 0
    for sid in sorted(split_of):
        split = split_of[sid]
        if sid in ignored:
            continue
        path = raw_dir / _story_relpath(sid)
        if not path.exists():
            sample = raw_dir / SAMPLE_DIR / _story_relpath(sid)
            if split != "test":
                raise MissingSourceError(f"{NAME}: missing {path} (run the download stage)")
            if not sample.exists():
                missing_test += 1
                continue
            path = sample
            sampled += 1
        story = parse_story(path)
        scenario, number = sid.rsplit("_", 1)
        if (story.scenario, story.number) != (scenario, number):
            raise DataError(
                path,
                f"<story scenario='{story.scenario}' id='{story.number}'> is not {sid}",
                story.line,
            )
        doc_id = f"{NAME}/{scenario}/{number}"
        documents.append(
            document_row(doc_id, split, story.tokens, story.sentence_starts, genre=scenario)
        )
        mentions += _mentions(doc_id, story, cfg, stats)
        per_split[split] += 1

    documents.sort(key=lambda d: d["doc_id"])
    mentions.sort(key=lambda m: (m["doc_id"], m["start"], m["end"], m["cluster"]))
    notes = [
        "stories: " + ", ".join(f"{k} {v}" for k, v in per_split.items()),
        f"mentions: {stats['labels']} participant labels, {stats['chains']} coreference chains, "
        f"{stats['singletons']} singleton clusters ({stats['singletons_dropped']} singletons "
        f"dropped by singletons/singleton_exclude)",
        "entities per story: " + entities_per_story(documents, mentions),
        f"{stats['multi_chain_labels']} labels listed in more than one chain "
        + (
            "emitted once per chain (multi_chain: all)"
            if cfg.get("multi_chain", "all") == "all"
            else f"kept in their first chain only ({stats['dropped_memberships']} memberships "
            "dropped, multi_chain: first)"
        ),
        (
            f"train: the {len(ignored)} stories Modi et al. 2017's split ignores are left out "
            "(train_stories: modi2017; Ji et al.'s 619)"
            if ignored
            else "train keeps all 637 stories of the split file (train_stories: all)"
        ),
    ]
    if sampled:
        notes.append(
            f"test: full test stories absent; used {sampled} sample stories from {SAMPLE_DIR}/"
        )
    if missing_test:
        notes.append(f"test: {missing_test} test stories not available (held back); skipped")
    return Normalized(documents=documents, mentions=mentions, notes=notes)


def entities_per_story(documents: list[dict], mentions: list[dict]) -> str:
    """Mean number of distinct clusters (the entity inventory) per story, per split."""
    clusters: dict[str, set[int]] = {d["doc_id"]: set() for d in documents}
    for m in mentions:
        clusters[m["doc_id"]].add(m["cluster"])
    out = []
    for split in ("train", "dev", "test"):
        sizes = [len(clusters[d["doc_id"]]) for d in documents if d["split"] == split]
        if sizes:
            out.append(f"{split} {sum(sizes) / len(sizes):.2f}")
    return ", ".join(out)


def _stories(raw_dir: str | Path) -> Iterator[tuple[str, Story]]:
    """(doc_id, story) for every story normalize reads (the same files, the test sample
    standing in for absent test stories)."""
    raw_dir = Path(raw_dir)
    for sid in sorted(_read_split(raw_dir / SPLIT_FILE)):
        path = raw_dir / _story_relpath(sid)
        if not path.exists():
            path = raw_dir / SAMPLE_DIR / _story_relpath(sid)
            if not path.exists():
                continue
        scenario, number = sid.rsplit("_", 1)
        yield f"{NAME}/{scenario}/{number}", parse_story(path)


def mention_kinds(raw_dir: str | Path) -> dict[str, dict[tuple[int, int], str]]:
    """doc_id -> {(start, end): participant label name} for every story normalize reads. The
    mentions table keeps spans and clusters only; entity prediction
    (tasks/evaluation/entity_prediction.py) needs the label kinds (ScrPart_* vs NPart,
    No_label, ...) to choose its slots."""
    out: dict[str, dict[tuple[int, int], str]] = {}
    for doc_id, story in _stories(raw_dir):
        kinds: dict[tuple[int, int], str] = {}
        for lab in story.participants:
            kinds.setdefault((lab.start, lab.end), lab.name)
        out[doc_id] = kinds
    return out


def story_syntax(raw_dir: str | Path) -> dict[str, dict[str, list]]:
    """doc_id -> the XML's per-token annotation that entity prediction's slot rule and shallow
    features read (Modi et al. 2017 select targets by the script event that governs them):
    ``pos`` (PTB tag or None), ``dep_head`` (token index, -1 for none), ``dep_rel`` (Stanford
    relation or None) and ``event`` (the name of the event label covering the token, or None)."""
    out: dict[str, dict[str, list]] = {}
    for doc_id, story in _stories(raw_dir):
        event: list[str | None] = [None] * len(story.tokens)
        for lab in story.events:
            for i in range(lab.start, lab.end):
                event[i] = lab.name
        out[doc_id] = {"pos": story.pos, "dep_head": story.dep_head, "dep_rel": story.dep_rel,
                       "event": event}  # fmt: skip
    return out


# ----------------------------------------------------------- Modi et al. 2017's release


def _line_of(text: str, *needles: str) -> int | None:
    """1-based line of the last of `needles` found in order (a JSON key's line), or None."""
    at = 0
    for needle in needles:
        found = text.find(f'"{needle}"', at)
        if found < 0:
            return None
        at = found
    return text.count("\n", 0, at) + 1


def parse_release(path: str | Path) -> dict[str, dict[str, tuple[str, tuple[str, ...]]]]:
    """humanPredictions.json (readme.txt: ``{docID: {tokenID: {trueDRLabel: [dr1, ...,
    dr20]}}}``) as {doc_id: {``sentence_token``: (true label, guesses)}}, doc ids as
    `normalize` names them. Any defect raises DataError with the file and line."""
    path = Path(path)
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(path, "not valid utf-8", data.count(b"\n", 0, exc.start) + 1) from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(path, f"malformed JSON: {exc.msg}", exc.lineno) from None
    if not isinstance(obj, dict):
        raise DataError(path, "expected an object {story id: {sentence_token: {label: [...]}}}")
    out: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {}
    for sid, targets in obj.items():
        scenario, _, number = sid.rpartition("_")
        if not scenario or not number.isdigit() or not isinstance(targets, dict):
            raise DataError(path, f"story {sid!r}: expected <scenario>_<NNN> mapping to "
                            "{sentence_token: {label: [guesses]}}", _line_of(text, sid))  # fmt: skip
        doc = out.setdefault(f"{NAME}/{scenario}/{number}", {})
        for key, entry in targets.items():
            ok = (isinstance(entry, dict) and len(entry) == 1 and all(
                isinstance(g, list) and g and all(isinstance(x, str) for x in g)
                for g in entry.values()))  # fmt: skip
            if not ok:
                raise DataError(path, f"{sid} target {key!r}: expected {{true label: [human "
                                "guesses]}", _line_of(text, sid, key))  # fmt: skip
            ((label, guesses),) = entry.items()
            doc[key] = (label, tuple(guesses))
    return out


def released_targets(
    raw_dir: str | Path,
) -> tuple[dict[str, dict[str, tuple[str, tuple[str, ...]]]], Path] | None:
    """(Modi et al.'s targets by doc id, the file read): the full humanPredictions.json, else
    the mirror's 10-story sample (said in a log line), else None (the rule's slots serve;
    logged too)."""
    release = Path(raw_dir) / RELEASE_DIR
    for name in (RELEASE_FILE, RELEASE_SAMPLE_FILE):
        path = release / name
        if not path.exists():
            continue
        targets = parse_release(path)
        if name == RELEASE_SAMPLE_FILE:
            log.info("%s: %s absent; the released test targets are the sample's (%s: %d "
                     "stories, %d targets)", NAME, RELEASE_FILE, path, len(targets),
                     sum(map(len, targets.values())))  # fmt: skip
        return targets, path
    log.info("%s: no released targets (%s or %s under %s); the test slots follow the rule",
             NAME, RELEASE_FILE, RELEASE_SAMPLE_FILE, release)  # fmt: skip
    return None
