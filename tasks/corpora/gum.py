"""GUM coreference (Zeldes 2017, amir-zeldes/gum, coref/gum/conll): 281 documents, 16 genres.

GUM's own coreference scheme (coref/gum/README.md): singletons, compound modifiers,
predicatives, indefinite antecedents and event mentions are all annotated, so chains are denser
than OntoNotes'. Format: see tasks/corpora/conll.py (three tab columns, cluster labels with an
entity type and sometimes a Wikipedia id, e.g. ``(place-10-United_Kingdom``); each entity
number carries one label throughout a document, so the label identifies the cluster.

Splits: GUM's official splits.md at the pinned commit (pinned below with every file's sha256):
dev and test lists as published, everything else train. GUM's "test2" partition is the
out-of-domain GENTLE corpus (26 GENTLE_* documents in genres absent from train). We never train
on it: by default it joins "test" (normalize.gum.gentle_split: test), where doc ids
(gum/GENTLE_...) and genres keep it separable; "exclude" leaves it out (counted in the notes).

Sentences: the coref CoNLL files have no sentence breaks (the whole document is one block of
continuous token indices), so sentence_starts are recovered by the punctuation rule of
tasks/corpora/base.py (punct_sentence_starts) with GUM's own sets: a new sentence after
". ! ? ... …" plus any closing quote/bracket, a straight '"' only when it closes a quote
opened in the sentence (split_sentences); normalize.gum.sentence_split: none keeps the whole
document as one sentence. GUM's dep/ CoNLL-U has gold sentences but is not in the mirror.

Reddit: the public repository masks the words of the GUM_reddit_* documents with underscores of
the same length (the text must be rebuilt with GUM's own tooling from Reddit); their
coreference columns are intact. They are kept (their mentions are gold) with a note; their
tokens are useless for language modelling, and they get one sentence each.

Mirror: 253 of the 281 files (every 10th sorted file held out); the 28 held-out files are
optional sources with the upstream URL and no pinned checksum (not published upstream).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tasks.core.errors import CorefreproError
from tasks.core.fetch import Source
from tasks.corpora.base import (
    Normalized,
    absent_note,
    pinned_sources,
    present_files,
    punct_sentence_starts,
    read_file_table,
)
from tasks.corpora.conll import document_row, mention_rows, parse_conll, single_document

NAME = "gum"
MIRROR_DIR = "gum_coref"
LICENSE = (
    "GUM annotations CC BY 4.0; texts under per-genre licenses (CC BY / BY-SA / BY-NC-SA; "
    "reddit: Reddit terms, non-commercial): LICENSE.txt of amir-zeldes/gum"
)
COMMIT = "72ce5ac14978a324c2fd18d49484e65292cbe316"  # amir-zeldes/gum master, 2025-05-12
URL = f"https://raw.githubusercontent.com/amir-zeldes/gum/{COMMIT}/coref/gum/conll/{{name}}.conll"
RELPATH = "{name}.conll"
GENTLE_CHOICES = ("test", "exclude")
SENTENCE_SPLITS = ("punct", "none")
_SENT_END = frozenset({".", "!", "?", "...", "…", "?!", "!?", "..", "...."})
_CLOSERS = frozenset({"”", "’", ")", "]", "»"})

# sha256 (from the mirror MANIFEST; "-" = held out of the mirror, no published checksum),
# official split (splits.md; test2 = GENTLE), document name. One line per upstream file.
_TABLE = """
c6cd23f664f9a5bb679cce8f1891dd044d4e92768bc4ca4240558679ae88c9ab test2 GENTLE_dictionary_next
4dacd1b416f92385457640a95016a5bb82c3adbe0701566c35cdf55f9ac83d63 test2 GENTLE_dictionary_school
21925524094861ab6b84ff07b727fc112efed24e020d778543b51ef5450054df test2 GENTLE_dictionary_trust
7b210368ac67b53679307d6d79c0ad31f014a4bbe81af925a3c06bd9e172f202 test2 GENTLE_esports_fifa
9bbc1d3b647507ff2d67ea3bb432d500f2bb6aae666210f5741a4be96c1cd663 test2 GENTLE_esports_fortnite
f12e3364e55afc7235373d6555c1850582f38d62bc2b3a38ecacb254c7cb9434 test2 GENTLE_legal_abortion
b94fcf937d9601c814e7fbbb9c003dbce5dbba00718639386bfe24764bdcbf36 test2 GENTLE_legal_service
282a8d8a8d7c3900a7d650e891bc3eead9e0e5d5659fa7340804cbc9b4e99471 test2 GENTLE_medical_anemia
0a06d639df70603512da2f267fc8feb32401d75e64829170cafc6664e4d11c09 test2 GENTLE_medical_hiv
- test2 GENTLE_medical_screw
2b168eec240c8d2c327d6614bbd0ccec818a8f7a53e92f64de1ab1d9fc80f4ee test2 GENTLE_medical_transplant
603c1e98a3305ab2d2520b776580d2892b6ea644bae768fee46c18ea4b3764e8 test2 GENTLE_poetry_annabel
f4a655228f89a2dc8477b9369cc8a9ae870818ea68043a67906973119cefa239 test2 GENTLE_poetry_death
f94d41e37183dcb67cdf3b2fb3c0b6724dd1b6563cf6793a68fea44bdb662dff test2 GENTLE_poetry_flower
b53de1b2d505f5066cb1c14cbc9564600af310485dacfee9cf1fec75fd682a96 test2 GENTLE_poetry_raven
1d5cef88af123506b9da7c69c3661251b9ce1beb34790cb8b2107a0780713d14 test2 GENTLE_poetry_road
04d1f8e13ff84fff5370865eaa9c508e64278d85fe8010a190d224747ef72ea1 test2 GENTLE_proof_five
c2978095760e52b0aaafdba9976a2033095a96c8a81fa2affd4b946151c09302 test2 GENTLE_proof_square
d9fe8d28455b300a5a3b2d4b62e365d8be90a3299872d022eacde12386d26ad1 test2 GENTLE_proof_wosets
- test2 GENTLE_syllabus_opensource
eb184a360180504604a0d568c2723a0e240d34ec22419ef9fdec34dddfd0b479 test2 GENTLE_syllabus_techtonica
2416665be51b91eabbcb4549e5784b45cfd954db33d8e6502ea2f53c5c31f1f7 test2 GENTLE_threat_bolin
e0cea7d1bc159a121e516e083de146e26ff6d8709ff730a09de76aa633730a84 test2 GENTLE_threat_dillard
f3bc5158f9782f5504910e954ac769c770179e883be4f8971d7fa90538388231 test2 GENTLE_threat_kelly
5df42d1defede924ef1675416d007e4130f43e54c954f4f0333e54c810d7a72e test2 GENTLE_threat_malik
8121965072fb77edf1685ca654d5d57934be92cb5f5b6cd7faef9753572cfa6c test2 GENTLE_threat_white
45b23289c6234c7e840e69911c5d0f38c642c0d7d9bbe34101677cc2b1a3cf90 train GUM_academic_art
efdd2a401b6aab88ae63e28a879a333c445bdee1cf088be5c6476583061eb829 train GUM_academic_census
c6700d7d348fbdbef78881eefc618606baddf72b96d5c8c151cd253740292a0f test GUM_academic_discrimination
- train GUM_academic_economics
e549042d0e959fa13c0f5f3faaaf75d7e9bc00b00ade5fbec73f708fc125a147 test GUM_academic_eegimaa
ae8e854323c38396e9cb54d856eae11c646761c2243054530f1284304c15c908 train GUM_academic_enjambment
bfac81c0ce3f78241459cc83bcbb12f50cb3171fc979e21d43c743d5c04176ea train GUM_academic_epistemic
e3689778aaf3c016ef15c19aab87dd87f4d7a17e345a70a450528f62ea3e83ea dev GUM_academic_exposure
28e7e074d3d026c0063030ad24c384635d80e9e2d2cea3b4baf6d84b9401e1cf train GUM_academic_games
a32dbf9690c83024873e1d0c58e5903e5e1dcc1fbf483b713433a0ce1a85772e train GUM_academic_huh
e374b4efa590f8c5f249e7febf1b8861b26b04cb73b3dd246f40a0da95845f74 train GUM_academic_implicature
ac7d6db0bd39ccfda5414551c8914669dc6bbc6ebf4140a54f4d2c8263025949 dev GUM_academic_librarians
2330d69dce121d0302afded2f45af53f6dc7b1c6017fed9123517f0896daedc9 train GUM_academic_lighting
- train GUM_academic_mutation
d184eed3b7d007dfe0320e05f22f7f6f55747fdbe1eef1f8f30cc8a4f7ed100c train GUM_academic_replication
3b4778c8042c0cd66c983b44f4fd5c1e2446f8e1db823ddb68a9c0f8cf0234b0 train GUM_academic_salinity
fdb77377c669d0d9a163dcbfcfd56c3b84eb2421456886ce4fe4784644f4183d train GUM_academic_theropod
8e1473975a621c2d3bd4efbae7f1963bec2aba9acf70f18df0da5287fc4a0e7e train GUM_academic_thrones
c6a03b39df0740a582428338531567d0990d5a1bb8109f6eb5f90aae2477783a train GUM_bio_bernoulli
5b11b82a73cfbe25ba470fa4a1799d750a7d988a15a9ebf6a1a9274ab83b13ea dev GUM_bio_byron
4c9433e61fa664c9657b59da23ebcea50a17cb9001a07ed1b73a70be7bd75dfc train GUM_bio_chao
c273ec830de23cb0848ca6e0ec6771653f71111fc4da1949fce9e253f0669569 test GUM_bio_dvorak
4ce73cdb0cf721aeb72fb836ddbd4ae4579c3dd1e6aae4eaa1597e41d48b4c14 dev GUM_bio_emperor
- train GUM_bio_enfant
179a1a9e887a501ccf6cfc3cdc0c68f86ff6a3f8d94ae4acd04c4ee18a6be24b train GUM_bio_fillmore
f9e276561b09ae25b1d2ffe58df5879d858bd9884bc89df09df2afa739771163 train GUM_bio_galois
ea12edbf882bdb2eff9538e9540b91ce2a1def34c6c3c76633c591e554659378 train GUM_bio_goode
077ed5e9dc2d06491887479ada2ab36201c79060a9bc370eda9e0f78a21eb84e train GUM_bio_gordon
9b8fbaa9aea2503c87c3a97ca85e372f455e96923de00f03a9363d71b773a013 train GUM_bio_hadid
a91db5988ecf224cfcbd5346e156ef79e44c16ffdb3aa8d6f440c66252d62a4b train GUM_bio_higuchi
ff63b7321f9745fead2c303442088d1e8d7e4200a7b3c72f8470633eb6c1793a train GUM_bio_holt
069e707189f1dfa29f3402f251582214afbccbf5cbaa21343ad72f082b788140 train GUM_bio_jerome
94c47814ff59e9d0264f7ffdf879b942ab865efb3458726b37077da66146e4a5 test GUM_bio_jespersen
- train GUM_bio_marbles
cd0d7335fb401459c131278543a5a863489c24b2a3d4dfdd421104355b3ae3c1 train GUM_bio_moreau
315fac923e0f8f004ffcaddf74ccc8e21f84cefb98bda94648074680455f9099 train GUM_bio_nida
7f12e6d47f4d17415ecd6f81c2c6a293eb53c6ee877e9e7989264f757d92ffa2 train GUM_bio_padalecki
59d8d5c3db2ec9bf2be94cd5b914febe31d1e8cfe82520bc24e71ed62caff482 train GUM_bio_theodorus
16d4b4bb60a9b9dad2e7a52224401888bbf6922a85e11fd10e5a0b90fb12c241 train GUM_conversation_artist
c0b2862304b9c41c18701eb6321320147d429e17792cc5afb26a17c9b233f356 train GUM_conversation_atoms
856f6f8db5a7a9a3e9ba8f351d190f34cf8c90af6d0b463f0e9bb09e1d1d09f8 train GUM_conversation_blacksmithing
db6022fa374771287a019559c09f251f6faf59537db92846cd0d98d8ff33103b train GUM_conversation_christmas
a94ddfcc61d36dc4412f4707463baa8c7b544c77305199e6864ae2af986a888b train GUM_conversation_erasmus
- train GUM_conversation_family
23a443150452d0aa5f8a20c54411cc83e805b07bcc36abcd0973ae96fb40552b train GUM_conversation_gossip
f4de45c6627df0c591b18f2bb25064505a4d6e42c1ac5824d489aa3d95066627 dev GUM_conversation_grounded
696b4a578b8a283fa8849f16dafa4a56f9017f8bf02a0bc7a9494788b426dfc4 test GUM_conversation_lambada
f41e313332d15b7c3fc725fca00f97fb5276af9daa308b6d7e2c7458c704ac4e test GUM_conversation_retirement
2267104c3c19b616b22c609a7b1137575e3e38f58deead06c45334761c9d80e3 dev GUM_conversation_risk
7caeff52a9d37536ef265b93fdd11b2def1d931937f0d08370441ee4bae634e6 train GUM_conversation_scientist
467866bf900639d3be101fae446c29eaf9de58d85e8492b9edcfd17659a88d56 train GUM_conversation_toys
8eda62072c8dec588526f522f31bdb2b965a945f0ce348406c0d77cd5ed9b290 train GUM_conversation_vet
2ca1097ebb1882f24547fd9312e52e1070cc5e1f7e5c2414f926a5752a0eb772 train GUM_conversation_zero
- train GUM_court_carpet
6f2e83c31a2171a1b84edf68ee26c4fc4cd6dc6eed893a3bcc31a9fe011c2415 train GUM_court_equality
e1a90ade6a99d8a64892e2cf9f1df867fc064ef932c5ba80eb5de2e4b74fd285 train GUM_court_fire
2ae8538d053cde5879d9f6526c0f10b37a62a2b9dd210f44d55aa1e5c4b71ca1 test GUM_court_insanity
ad679b6bd82c61dcb185e401f7cf68dc8e57b32de962ddd9e80ec395e3f04f24 dev GUM_court_loan
6a3b172cb55269e4306e565bebef38072b07aaf3ab7251ff26272ab66d00638d test GUM_court_mitigation
5bdb2449477b4435b322350a7296aedb63139019739a0f4133b1e0866bd510a3 dev GUM_court_negligence
a09c73e3fdc225cebdde5cf62962c01565d54084155e4d77f162487eb6b614ae train GUM_court_prince
7e3d7a54d150243677bbc0ced677de2481b3a7e62395e90e94a6bdb2376e473c train GUM_court_property
8ae2839c88b2b1aea525c93fcb969daa814da82b7d54c94bf9e0e349119b5821 train GUM_essay_distraction
- train GUM_essay_dividends
080a17ceb53da5a0e2f9db0fa8c2cf7f3a368cfe83cfd54ba15bf7e950d6b65b dev GUM_essay_evolved
6ce09a9af674f00b699efd1caed77046655d243a73bde6e431de86f7150bd36e test GUM_essay_fear
0018f69c1d931df8ffc0d0856be3ea0280308d030a4639ee5ecf1796c4b1e742 train GUM_essay_food
e8bc946a181159f1ea6a5eba1c0555757e225aa5b0ad604f6d6799ccb0ab7127 train GUM_essay_ghost
94fd1e2d37a0ab77946e1a5b6187cd9a41e79e89d6e5aba0dd2c83b58547b989 train GUM_essay_sexlife
983caa82cac566408db6d8413de35fdd646579d46bcf9fa2e5307e733e2c65c7 test GUM_essay_system
c4676ae04accf5fb522563bc67186fc202e2875bea2e5cfef179d69aa44e6222 dev GUM_essay_tools
cecc07bb4ba923bb7d0d5824b71f52707723db77ab520e7f4e315c51b1959a66 dev GUM_fiction_beast
78bf50e6acc5b8ee332cdf29a3c2a00dc611764467de5a64cfad1b0952727c83 train GUM_fiction_claus
- train GUM_fiction_error
7b2df0bcae6b0c5520af0cabe19a23ed52f511e51272c23ed8286782d128d3dd test GUM_fiction_falling
28a6c83931f16571854c54eb6a99e18ec9c1e2e83a4c435d626be42cf3846e49 train GUM_fiction_frankenstein
54cd8c7fe5f9eea29b779e3ae9138f21edacba00eed4fc6b9d31bcab94d38b56 train GUM_fiction_garden
4054269f1406ec840ae6936ca4dc474d25f0f0ce264245f592fdd7df5e9c6e52 train GUM_fiction_giants
e5b3decd18fac4e4f9215ec7592846b9df547e889d2ac239a17f74e991bf6a5b train GUM_fiction_honour
cf59f368ec3bc20e7c393b81447b8c8a276e279936b3752952c455a1d5003470 dev GUM_fiction_lunre
f0078503eff8b77fde7b617990a25e0c654f7a840e0fe67f176f9d705445c44c train GUM_fiction_moon
cc230c59a51330a348dcbcf30e06f7ef9ab96c6279514fb8687047fc008671f0 train GUM_fiction_oversite
fd4f2ebdec7150d57675d22359878b2b08c7d4938f7e029c9f31f733f4b3de6b train GUM_fiction_pag
- train GUM_fiction_pixies
b309282900eb40974bd11787b868e7f0a53c79352b8f8d0f7394e6f66d55f4cd train GUM_fiction_rose
5f5613eee2a64aa8342ec2b7652d3dd4c07427b74ed6bb8d727acbbc54780f4a train GUM_fiction_sneeze
61faab8524e74527b3bdb9dbc6460540bde1ed95e7858ca52c0d1d3f1ae89a41 test GUM_fiction_teeth
a16b3b2df360566e61d1baad31d89e2b615b55e0edf8300019501c524096379a train GUM_fiction_time
2b18efefad1f6c174cfa151f056f9af53e588052d21ac2205fc04fd4b97d91b6 train GUM_fiction_veronique
34869e81758177e37ddba8db0a07fe9ca45a236fbea71af41dc10912cde1e690 train GUM_fiction_wedding
6c8eb60a4336f7e8a3353ec08e62802493b2222282bae257104a837376bd6905 train GUM_interview_ants
73d87574edc496ffe0b984c329679712db7e2d0ba401cf42302545e5e2a159fc train GUM_interview_brotherhood
5f5da6d63a4b2007ca468d46a83af6cb3604f7f65cec7b09eb2dcd7d35763464 train GUM_interview_chomsky
- train GUM_interview_cocktail
876c18704e321c86c85ffeeb9e0ecd51dfd8a1904772862812293db44abd1748 dev GUM_interview_cyclone
b5d8c44561c74bdf26024361d3a78b8ad97f3af1768aad553d928c1bafd9bc02 train GUM_interview_daly
e9ccd5f89ea2ef346909f1707f8fb5b6bec46fffaffc1e8380ef4b97b6564609 train GUM_interview_dungeon
55214df177d2c3fc1653004156514cfa72aeb6448714220ab8a41296d86571bf dev GUM_interview_gaming
c568a32076201d37bebc1f1ed469660a517f4a11b5b8711bdc5034b5154d96f0 train GUM_interview_herrick
e4d7494f8282729d0a8c7414986b78050afc0fd9ce974f6597a62604052aacb8 test GUM_interview_hill
fc7468f5a019aed2dfdf0a42c439ab713ab3f6b00af1356554aa9769a3e1f138 test GUM_interview_libertarian
4abed4d952e50e5888eaebed82af60ee58aa4fc60858e5a7c1a6d256f11a982a train GUM_interview_licen
544309b77612dd89ef8ba4d4db0dcbee2a4c79dfbb56c8eb47c0feb3452b8cb9 train GUM_interview_mcguire
- train GUM_interview_mckenzie
367fd35338c9a27092ab36de681270f1dfae47d48cff7fbb1f7e58a25b8d6ef7 train GUM_interview_messina
e880c44e250d7a8b811e4b07a437c763700ce6cb5c108a667bb2766a8d962dea train GUM_interview_onion
ba7b92e32a0d276ad00558cb350a26d699397fd486528626c27bcad6d2ebe8e2 train GUM_interview_peres
1ae86a4f60f2f65bd50607c563f7fcac0856ef8d8c63c95dab1abfdb2e892cf1 train GUM_interview_shalev
048692edc7741bca292e9e2ba355cbfaa3641abf16f5cdd29aeffe5f34015f19 train GUM_interview_stardust
8501ef70d39f03ba4458e37699f0c9ed91f40e08b1beb5864c42343ebd27bd5b dev GUM_letter_arendt
7134a99260649ea09593640347d8b6d847479e4b78cfdd17e8bde428823d2f69 test GUM_letter_attorney
82b5d8883893ff277c3f021776bfe8a9bb55adeff5d4a39cf71413f37ce4a322 train GUM_letter_conference
cb138c1474e7e0d861f825f4208d87b44ef6e7675f8e126c5308a460570457eb train GUM_letter_flood
- train GUM_letter_gorbachev
e5a55d82149e13d251d2f40b6dd53c6ff38fe11e5e343eb3d00a51e73ee2dd9b test GUM_letter_mandela
7cc20b344578a4bcbfc5e7165d599d0e33bb574a9692475fe4de2fd5ca202771 train GUM_letter_marcie
26fa8cae60a92940b881d2d299be5bd4536c48696225d0ba0ddac9b042157fb6 train GUM_letter_marcie2
8d792becc3236d81846ce5b284f19f22298a1d4da8cc5b8f74bfc01922f36dad train GUM_letter_marcie3
80329ac542bc2c043857baa43f2343b2c41be9b1a6b9fe9df5fa33b29238ab6a train GUM_letter_roomers
43ace18a9e1c7cc4430c2250f9bccebeb12649b71aeb4e93a9a8caddd7d58d4b dev GUM_letter_wiki
39c139fe7c140a33dae5537f50aaff16e8df677febb9f934ac347f539511ef25 train GUM_letter_zora
2e12c3b32dbedb3f263f5c815a004fc3517c56dd0fd38b86754844c31ddc1861 train GUM_news_afghan
cf4eeeb4508733e2a300d677268f51a779114549cab5d6c3c267614b7afc2d3b train GUM_news_asylum
- train GUM_news_clock
6d7277e45bed2f609aadbba9f61bf0d4fccb8d8cefc439a6029e0ddf969ca45c train GUM_news_crane
ef31c5500d3b36d7a07f087c7f8bbc46aff1a0a610194fdf7ff976b4a91661a7 train GUM_news_defector
b17d751b818579897b3c6f0cf1550e52be2a3adf791adcae6bcdc70b2b5103e4 train GUM_news_election
20cc849fc303fa22b1f20b1f1df0ef636f232ef70455da88624f8074a9df7bad train GUM_news_expo
9dff3c952c2bf17c726a7f20d5243a7edc6da132dbda3d6a951cea55b1f5ae09 train GUM_news_flag
4cd0cd48420cd9d95cf57be879132fb826be64f218ee6e0dfed2beeca7f9adcc train GUM_news_hackers
5443f3eb7bf8ca183a5cf5bca7e77fe6c369a6ed7a91915c937f44e1fe8fa319 dev GUM_news_homeopathic
12b4bafccab1930ee8ee719005abdd30f4cb0ffbde5e6514c918546d88f7e6bd train GUM_news_ie9
530bcc2c9a7ea9519af9d18a6a96e77284bacbe2d7ef6c5271b3e5648609b0f4 train GUM_news_imprisoned
- dev GUM_news_iodine
5ae27dcd905a3df00c5282448cb4ce67963ec02684125e007b90463ba09f9d43 train GUM_news_korea
66324e26139410c6b11b081f827d2242a0e43ddf1241cc5b1b2a12f41539baea train GUM_news_lanterns
94582b55cde28f2cc576436cd18aa958eefabde4ac94fca1cff8a68ed8a6d3cb test GUM_news_nasa
e1d281d5ba92409855197b684a772279277916981c26452318317ffc7c109e34 train GUM_news_questionnaire
61743df193763241177ccfa247a8c2335118a6f93b3dbe479be1a59c76bb0f22 test GUM_news_sensitive
beb3a91b70dec8e86bbb9eca7fc07bda23bd1070df60f73eb256c3b1d2432503 train GUM_news_soccer
275b562477c29faa9d593c93478a27aa63e6dddbc208abd27ace35fd1a9a7fcc train GUM_news_stampede
aff1849856fc2a70835662ff865bb4140c12a79f3707fe50b8682d69cf267d81 train GUM_news_taxes
810d2171e6d5de924bf58d402379382abf83ecd8d2eff4764de0d0f98265ee18 train GUM_news_warhol
- train GUM_news_warming
779aece7ec0c8d5b5099fda9199bcadae4fd7a8b371428e08a51fa1097ac2803 train GUM_news_worship
d8f798a026081d3abb1dce61429a0e7e865940866dc7cdb0b38faa166dd8f198 train GUM_podcast_addiction
10837478d93c73744550d2ce260e69194abdd1c6dcca64a10991360060df283c dev GUM_podcast_bangladesh
7efb762c0fb98a80e8556e2dd252034a62738ca85fe4db2f5dc67dbeb77a0a18 test GUM_podcast_bezos
1911f6099158bc3748aba49e00ab18a6da4cb03973ca9471bd0179dfd15fa92a train GUM_podcast_brave
a22995bc6955d7c07dfbb206362a94b03ad90e0504fa1f43a058203890ca8d98 train GUM_podcast_collaboration
ed98f6bed276471d50f982503977fd15a1c07cffa919f85dc3d0ca9d59eeb761 train GUM_podcast_llms
e87ea711ded705f7bb449eddfe8f772502467f2ed7c47c559eb72430113edbeb train GUM_podcast_movie
58ed1c673e7ff7d8525bb3b6cbb5758f347ca0f3ac161156c919d954af4e6a77 test GUM_podcast_multitasking
- train GUM_podcast_pandemic
7ce341ba8d6a8e6d58a45a258cc37a43a1b3b1baaaef9fecb4456af8b8910c32 dev GUM_podcast_wrestling
1c60c202b5c6926a985a057e44dcca2a6971a23cb7ab5d4b317af7191c47c891 train GUM_reddit_bobby
00349b53557e46bf1fb61b4b2c6fab1d3a22f1d321d02b9258bd74d3b11a1ced train GUM_reddit_callout
7049b96644f12428724f011134c5fbc6972241627d172a0bb3fa119f8fc3774f train GUM_reddit_card
edbc65adabfd19091a23ddd1e7d647d13b41bb13be69f00337868a964a87eb48 train GUM_reddit_conspiracy
c347c0f86806123fe2d713fc610d8a08608d9f4c5d4dee6a1193b83297015595 test GUM_reddit_escape
90034b2a89a4c62f60170b06e22b5ef9ef6f21cf3cd36df00960120031ac95e1 train GUM_reddit_gender
c6645a727dc7dc73c635a8a0174585c08a9a8a4a8c4b19c0b19fa217811a3894 train GUM_reddit_introverts
ac61d39b91d64cf94349586162b1d78ac93e2f376491655a153677b6425b5b5a dev GUM_reddit_macroeconomics
- test GUM_reddit_monsters
7e13aa7cdc673ed3a96a3dbf0cffb5e53e2205603e6226cb29dc0b605de5d7e5 dev GUM_reddit_pandas
c8b9141ecdb6a30c6a3a80b37c2959fda824d6670968f4a9dd570425a78ea442 train GUM_reddit_polygraph
800e46e5c85237c3567171f1f6cf78fe68772e6bf7dc713f69b5e6259f6a2e51 train GUM_reddit_racial
aa7a5f3b003b6054d46e663b56164bb21a460122462bb8cfbb8bd2d7e6c279cb train GUM_reddit_ring
01e11970361f43eb373bcc58f184772dab2d0d749ced20281c81b02569796f41 train GUM_reddit_social
b3830851334a636a77d86c61ab0ed3753cc66177bca55277fd5822ea3ac514da train GUM_reddit_space
2b9afd4f44d4e0062c68cb781a1e54a9491f2079100d1e834b8e56bee0aee0ac train GUM_reddit_steak
80fc068d67c9a7b74442f09d850ab605bae91c3e33533da706ecd89c1b94fbd7 train GUM_reddit_stroke
c3af484c653dcb8ec6b934dc25932e9fd702d3f491a1d012451a7d869c076970 train GUM_reddit_superman
- train GUM_speech_albania
c30b2e620e040abac0b8db7742038789c10d524764f91ec4711f385b8237b7a6 test GUM_speech_austria
10bd6b1511ddcf3021f68ab4033eba68a19784791b2dbaf4e9f22f34b03f52cd train GUM_speech_data
64b12b1d21cfcbb7e1111e319a08459a725cef1f3883f2e45aee3c0fe592969b train GUM_speech_destiny
eef6887b4545daf174633bee649eda33ca5a45b2219df009da1d369927bda1b5 train GUM_speech_floyd
3ca1381255f94b5c454b495208179a9e639800ff60b49f7167e8e20ee08af734 train GUM_speech_humanitarian
dddf28952f77075482c078d9ff63a39a86d1ffd91839ea4d25e58e870f6060a4 dev GUM_speech_impeachment
2db1364571df00f1aedf17c8651ec43760fd792c7c886d50561b1bbdef8abff9 dev GUM_speech_inauguration
f47afb2e04f6ba5df82a78ff9b78e40c03d4b40bbf117cf6c8784dfb1434e276 train GUM_speech_maiden
098f5c7aeab58b70c7e606fae879f9597c3dd56b5529a6bc2e2c36692b8134e2 test GUM_speech_newzealand
- train GUM_speech_nixon
4454a87b24f8531fb68726d681c1f482d425ab4c18c4640a3145570f06be4733 train GUM_speech_remarks
de03fcbfb088c1556bdf9980cc499751e046fece3d650c08b1e6afed2727339f train GUM_speech_school
a456727bc6bc4117ae83f48e7af666dc2d64ca39c9c8402e6083ac02ee996715 train GUM_speech_telescope
e7b1d02b17f20b228a0797a282fef39eb93e6f40d8f1d7999e16591a93e609de train GUM_speech_trump
996f52a7b15b32fd3e1c46de4f9769e2026e183e65314d52bd3e3703d80759b6 train GUM_textbook_alamo
4e4055a0755f39003ce48b4e2ef7ca3896932d67ea1ae34d711461ba92669f31 train GUM_textbook_anthropology
4bf8d0f5b32915763f182266c0add4457db268fb8a229b8cf500c90e60fd2720 train GUM_textbook_artwork
d73b96e8cdb4280bcb22ec75d0fa44604da566a74433cc77c0174a7e629f42aa test GUM_textbook_chemistry
f1e70ac2b4deb5e24c4dfdeb817a04a9cb1d04a3f783bc8b59bd86c09a28d2d5 train GUM_textbook_cognition
- train GUM_textbook_entrepreneurship
15085b56ecd1cd0d73394ea5e6c12f7f7ae2e5363f2e7e7733b6a23382764d38 train GUM_textbook_evoethics
662c608ca0e8c266adf42a92b071505fd95a37db3b803ad7b9586d532555bfa7 dev GUM_textbook_governments
d65a7a14c691b60a41b239cc63b46c5dd3f095cf670b1b215e991cfdef43cd47 train GUM_textbook_grit
f6dc74d1a138f6cb1fcbc331ad54c965731d3185122cc7ab63dbb39d05910827 train GUM_textbook_history
c37d81439d8d28e574dc99f4e5dd23e94463e5696de53fdcdac574ec992d7df6 dev GUM_textbook_labor
475e3e9772d1f31c720a27c409b503321cc222f08ddf6fd3564ad07acc92bc81 train GUM_textbook_sociology
fb13a8bd03267c1e8503aea18c98c7966818148393f91233a371f9a674346dcc train GUM_textbook_spacetime
3cbe01e59ba768f4ba7a6b4f142a1291dddcffc0d10ae18573d609c9178a9ecd train GUM_textbook_stats
295d585aed19e7d7d75e3758ade1baa0186d6645c1701d906ac308c13edb144f test GUM_textbook_union
- train GUM_vlog_appearance
0f3ab5a305cfd19a8e14e311511e8621d732730a46dc2b2fec651941dcdb5119 train GUM_vlog_college
5bc8ef1cda7116f412d341095f92b62ee315d6930b030175ef2c2ca043166029 train GUM_vlog_covid
46cb3482a46478f3ab88c508c8746255c13d6fa1d717705c767a9ea798343665 train GUM_vlog_exams
cb48afef1d3af52f4c24de81319df0868b8772162d4687ab89a73b8c5603bcad train GUM_vlog_hair
847cd7c4a73a6e1e8258d844ff476cf0d5c3bb77c172ff9881a82cdf6c31b649 train GUM_vlog_hiking
ea038d78d1244f3f745ca7f324fc8aac0759e4e9f02552ed343e3f0153bd3cea train GUM_vlog_lipstick
fe76ca997cb26e818fb948766ef25f2d8e857da85baf655d0190cc0ef655d493 test GUM_vlog_london
6226b9888258a2537c8435d60c2ba5ec7e9c87d4356de6f12d29bf5329278265 train GUM_vlog_mermaid
b71b6d4e9c38633dfc77a747b33bce9a3fbe74cf7e718c3224be5f8a2fab9d2d train GUM_vlog_pizzeria
- dev GUM_vlog_portland
812987b6c700e9745e49dc5a32172d06b67f64d1c8754919a9c302132ed9b3f6 train GUM_vlog_pregnant
d40ab1d306cae5f2f03eb7012f95bac94c43c35f2ff500e37bed304844019e4b dev GUM_vlog_radiology
52ac31af7c2af817332e22b097af5c1a037181349dfe607c8877485170c1ce3a test GUM_vlog_studying
58a6b3b4f3cdff97862cd6d53ac3534866ee45d0bc2373290b88a7c3d13ab852 train GUM_vlog_wine
1e1f98b7f7afa60b0317d691a9137bbf74f76366e8f44b5310a9afccb636c145 dev GUM_voyage_athens
2560be3e0464d758b42598abf97015164eb70e00a478386e312ee43d5f07d373 train GUM_voyage_chatham
b3fef44f63366553341c881fbaa062499ee0b706925c2ea9c07243ac462897ec train GUM_voyage_cleveland
de1b1d9e8be1c38b78bf512b59bea12566b169d6506817ec23c00ec436520e80 dev GUM_voyage_coron
cbbe35016eefb9c9a423c136bcc493835ac58b942fcc3f8029a33a339c24fae7 train GUM_voyage_cuba
- train GUM_voyage_fortlee
98fde3c0cffb3eeaaf78257e1d0be2c3f210ce1aa8d0de29234f7d90538360e6 train GUM_voyage_guadeloupe
76cdcf615972be5054d1178cf8144f10fb9c1552356ea354335770b999f7e9de train GUM_voyage_isfahan
19803101947417e3a576c29a61ff97a8a06c81ee37d230bfbe2a1667895cd41a train GUM_voyage_lodz
8fe8d3297d00e2fe394740de8272b0791863b8452d6fec52859c5b3fc1ffa936 train GUM_voyage_merida
8b6dd36c3ae4625cdf98155dbf60f7644a655568767bc97bb8b42deb920fa9db test GUM_voyage_oakland
04a58af46bab1c2971ebe626f2ae5a1151708d1cab97ebecc65d60649ef0ef62 train GUM_voyage_phoenix
642a2a28151ca03391856173fc5530a2f5977827bb900fa4739057e5397610f6 train GUM_voyage_socotra
0521e9198de5045cf585154339c7f25086fb2189cd85caba6d75e57758f4d948 train GUM_voyage_sydfynske
88071ee3d46928f78b068ff5a1f3e9af9edf028998d8079d33f67f5296b914f0 train GUM_voyage_thailand
- train GUM_voyage_tulsa
c7fa4fe6a3611682886963ac7867eda3ad03a92022b0fb815edc700367e011a4 test GUM_voyage_vavau
de4a941dc89abdcae312dca1bfdae2398978c112f8767275c63142497d09c4b9 train GUM_voyage_york
4f8a0177b824c308aab32949a07d6b95c326b443b735f36e6d5eb56e6607601e train GUM_whow_arrogant
e18c7069c82c47c69fd2acd4bf504d95c1bb8b83a5501b3604f6c85dd8da6643 train GUM_whow_ballet
110dcc5edaf288ebfffaf4a9058d5268b9958200eb2440b148efd982855b29be train GUM_whow_basil
d9bd1cb95adfc1d9ec97e406ddbeca82c29264905f9677a602dd05b9e85505e3 test GUM_whow_cactus
7a5723285dd510290030ea4123c39c0e807db2bc733e419414ec4749fa7dce62 train GUM_whow_chicken
e4c32133c4331a9959bbf2df7e26389def3d5372b920d874784aa5e4aec1eb43 train GUM_whow_cupcakes
f8f3fe1794a3d763ff12b9c1436cb44f456cf66e4e8c223dc85ffcf7a14d79f5 train GUM_whow_elevator
- train GUM_whow_flirt
511877a9644ae4a785fbdc6446265e4108f184cc9e6a767514cc69af199b1d07 train GUM_whow_glowstick
c51bfc5724b393a97d48cf984f6a2883b110b62b74a4cfd772e2b5fcf4fbc019 dev GUM_whow_joke
e3c6a60c65c85fcba960ceaed176cb35b5c0fcc38056df2cf9e0dff0f6909f3d train GUM_whow_languages
1a1265f7ac9792fd8745d8ab452b979e1d1a716a7437e3b2b0951be566fc25e2 test GUM_whow_mice
a075b97ccc7d92264cc7192e1ddb2607be1cb98df381a7ccd73bab1273e29931 dev GUM_whow_overalls
62d1d7716de2b4c3f297ffdda061b72ab66c3b857b1bad6450c05e024e0c0fb1 train GUM_whow_packing
3d9510ad2748b1498fd63820ecdce9e0b674db4d41d937e1d3e520ee81a27fb0 train GUM_whow_parachute
06d20477edf21e54c3c8875ae83bff9dbafa7d970b3a2a749f9ffcebeb602d71 train GUM_whow_procrastinating
e2da9de471bc0303a4a79fbcc7897f07b46305bd41514a88ebeff640cb71f553 train GUM_whow_quidditch
- train GUM_whow_quinoa
83a7e822006674728c65d587b6efca91060a77ee24d83d777cb41c5d6ada2129 train GUM_whow_skittles
"""


# name -> (official split, sha256)
DOCS: dict[str, tuple[str, str | None]] = read_file_table(_TABLE)


def sources(cfg: dict[str, Any] | None = None) -> list[Source]:
    """All 281 coref files; the 28 not in the mirror are optional (held-out test material)."""
    return pinned_sources(DOCS, RELPATH, URL)


def genre_of(name: str) -> str:
    """GUM_<genre>_<x> / GENTLE_<genre>_<x> -> genre."""
    parts = name.split("_")
    if len(parts) < 3 or parts[0] not in ("GUM", "GENTLE"):
        raise CorefreproError(f"gum: unexpected document name {name!r}")
    return parts[1]


def split_sentences(tokens: list[str]) -> list[int]:
    """Sentence starts by end punctuation (GUM coref CoNLL files carry no sentence breaks)."""
    return punct_sentence_starts(tokens, enders=_SENT_END, closers=_CLOSERS, balance_quotes=True)


def _masked(tokens: list[str]) -> bool:
    return all(set(t) == {"_"} for t in tokens)


def normalize(raw_dir: Path, cfg: dict[str, Any] | None = None) -> Normalized:
    cfg = cfg or {}
    gentle = cfg.get("gentle_split", "test")
    if gentle not in GENTLE_CHOICES:
        raise CorefreproError(
            f"normalize.gum.gentle_split must be one of {GENTLE_CHOICES}, not {gentle!r}"
        )
    sentence_split = cfg.get("sentence_split", "punct")
    if sentence_split not in SENTENCE_SPLITS:
        raise CorefreproError(
            f"normalize.gum.sentence_split must be one of {SENTENCE_SPLITS}, not {sentence_split!r}"
        )
    raw_dir = Path(raw_dir)
    documents: list[dict[str, Any]] = []
    mentions: list[dict[str, Any]] = []
    notes: list[str] = []
    absent: list[str] = []
    excluded: list[str] = []
    masked: list[str] = []
    duplicates = 0
    for name, official, path in present_files(raw_dir, DOCS, RELPATH, NAME, absent):
        if official == "test2" and gentle == "exclude":
            excluded.append(name)
            continue
        doc = single_document(path, parse_conll(path, token_column=1, coref_column=-1), name)
        duplicates += doc.duplicates
        doc_id = f"{NAME}/{name}"
        split = "test" if official == "test2" else official
        if _masked(doc.tokens):
            masked.append(name)
            starts = [0]
        else:
            starts = split_sentences(doc.tokens) if sentence_split == "punct" else [0]
        documents.append(
            document_row(doc_id, split, doc, genre=genre_of(name), sentence_starts=starts)
        )
        mentions.extend(mention_rows(doc_id, doc))
    if not documents:
        raise CorefreproError(f"gum: no documents under {raw_dir}")
    n_gentle = sum(1 for d in documents if d["doc_id"].startswith(f"{NAME}/GENTLE_"))
    if n_gentle:
        notes.append(
            f"{n_gentle} GENTLE documents (GUM's out-of-domain test2 partition) are in split 'test'"
        )
    if excluded:
        notes.append(
            f"{len(excluded)} GENTLE (test2) documents excluded by normalize.gum.gentle_split: exclude"
        )
    if absent:
        notes.append(absent_note(absent, len(DOCS)))
    if masked:
        notes.append(
            f"{len(masked)} GUM_reddit documents have masked words (every token is underscores in the "
            "public repository); coreference kept, one sentence each, not usable as text: "
            + ", ".join(masked)
        )
    if duplicates:
        notes.append(f"{duplicates} mentions written twice in the same cluster were kept once")
    if sentence_split == "punct":
        notes.append(
            "sentence_starts recovered from end punctuation (the coref CoNLL files have no sentence breaks)"
        )
    return Normalized(documents=documents, mentions=mentions, notes=notes)
