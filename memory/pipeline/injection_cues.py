"""Instructions to the reader that name no stock phrase: several weak cues that together only an attack needs.

`memory.pipeline.injection` marks the phrases an injection is known by ("ignore your previous instructions", chat
markers, a note to the AI). Attacks written to avoid them still have to do what an attack does: speak with an
authority the writer does not have (an operator's notice, an official policy, a maintenance mode), take the user's
consent away (no need to confirm, already approved), steer what the reader tells the user (whenever the user asks
about X, say Y), deceive or hide (say this is the doctor's advice, leave out the security alerts), and move the
user's secrets to a place outside (a card number into a payment memo, the contacts to an address). One such cue is
ordinary in a memory: a user's own standing request steers ("always answer in French"), a team rule claims
authority ("agreed at the review: ..."), a chore names an address ("forward receipts to my accountant at ..."). So
each cue has a weight and a memory is marked when the weights of the different cues it holds reach `THRESHOLD`:
two strong cues, or a strong and two weak ones. The mark names the cues and the phrase of the strongest.

English and Chinese, written in lower case and matched against the lowered text, each pattern linear in the text
(bounded gaps, no nested repetition)."""

from __future__ import annotations

import re
from dataclasses import dataclass

THRESHOLD = 2.0

_USER_EN = r"(?:the\s+user|users?|them|him|her|anyone|everyone|whoever|people|customers?|callers?)"
# an address, each part bounded so a long run of word characters costs its length, not its square
_EMAIL = r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}\.[A-Za-z]{2,}"
_USER_ZH = r"(?:用户|他|她|主人|对方|大家|员工|客户|家人)"


@dataclass(frozen=True, slots=True)
class Cue:
    """One kind of evidence: its name, its weight, its English and Chinese patterns."""

    name: str
    weight: float
    english: re.Pattern[str]
    chinese: re.Pattern[str]


CUES: tuple[Cue, ...] = (
    Cue(
        "authority",
        1.0,
        re.compile(
            r"\b(?:update|notice|message|memo|directive|order)\s+from\s+(?:your\s+|the\s+)?(?:operators?|developers?|"
            r"admins?|administrators?|platform|provider|vendor|creators?|owners?|security\s+team|it\s+department|"
            r"headquarters|management)\b|\b(?:official|mandatory|new|updated|revised|internal)\s+(?:policy|"
            r"procedure|protocol|directive|rule)\b|\bpolicy\s*\(?\s*(?:rev|v|version)\.?\s*\d|"
            r"\b(?:maintenance|diagnostic|debug|developer|test|audit|compliance|safe|admin)\s+mode\b|"
            r"^[ \t]*(?:ops|it|security|admin|system|platform|compliance)[ \t]*(?:team)?[ \t]*[:\-]|"
            r"\[\s*(?:message|notice|update|alert)\s+from\b|\bon\s+behalf\s+of\s+(?:the\s+)?(?:platform|operators?|"
            r"developers?|security\s+team)\b|\byour\s+(?:operators?|developers?|creators?|administrators?)\b",
            re.M,
        ),
        re.compile(
            r"运营方|官方(?:规定|通知|政策|要求)|平台(?:通知|规定|要求|公告)|运维(?:备注|通知|要求)|安全(?:团队|中心|部门)(?:通知|要求)|"
            r"(?:调试|维护|开发者|测试|审计|管理员|安全)模式|(?:新|最新)(?:规定|政策|流程)[:：]|你的(?:开发者|运营方|管理员|上级)|"
            r"(?:系统|平台|官方)(?:已|已经)?(?:更新|调整|升级)"
        ),
    ),
    Cue(
        "consent",
        1.0,
        re.compile(
            r"\bno\s+need\s+to\s+(?:confirm|ask|check|verify|tell|notify|get\s+approval)|\bwithout\s+(?:asking|"
            r"confirming|confirmation|checking|approval|consent|prompting)\b|\bskip(?:ping)?\s+(?:the\s+)?"
            r"(?:confirmation|approval|consent|verification|check)|\b(?:confirmations?|approvals?|consent)\s+"
            r"(?:\w+\s+){0,2}(?:are|is)\s+(?:suspended|disabled|not\s+(?:required|needed)|off|waived)\b|"
            r"\b(?:already|pre-?)\s*(?:approved|authori[sz]ed|consented|agreed)\b|\b(?:he|she|they)(?:'s|'re|\s+is|"
            r"\s+are)\s+(?:authori[sz]ed|approved)\b|\b(?:don't|do\s+not)\s+ask\s+(?:again|first|for\s+confirmation)\b|"
            r"\bcarry\s+out\s+every\b|\bimmediately,?\s+without\b",
        ),
        re.compile(
            r"不用(?:再)?(?:问|确认|征求|通知|请示)|无需(?:征得|经过)?(?:用户|他|她)?(?:同意|确认|授权)|(?:跳过|略过|省掉)(?:确认|验证|审批)|"
            r"(?:已经?|早就|之前已经?)(?:授权|审批|批准|同意)(?:过)?(?:了)?|(?:直接|立即)执行|不用(?:再)?经过(?:用户|他|她)"
        ),
    ),
    Cue(
        "steer",
        1.0,
        re.compile(
            rf"\b(?:whenever|when|if|next\s+time)\s+{_USER_EN}\s+(?:\w+\s+)?(?:asks?|mentions?|brings?\s+up|"
            r"talks?\s+about|says?|types?|feels?|wants?|searches|looks?\s+for)\b.{0,80}?\b(?:tell|say|recommend|"
            r"suggest|answer|reply|respond|insist|direct|send|point|advise|claim)\b|"
            rf"\b(?:tell|advise|warn|inform|remind|ask)\s+{_USER_EN}\s+(?:that\s+)?(?:\w+\s+){{0,6}}?(?:must|should|"
            r"need\s+to|has\s+to|have\s+to|is|are|has\s+been|have\s+been)\b|\brecommend\s+\w+.{0,60}?\b(?:as|to)\s+"
            r"(?:the\s+)?(?:best|top|only)\b|\bask\s+every\s+(?:user|customer|caller)\b",
            re.S,
        ),
        re.compile(
            rf"{_USER_ZH}(?:一提|提到|问起|问到|说起|一问|每次问|要是问|如果问).{{0,30}}?(?:就|一律|都)(?:说|推荐|告诉|让|回答|建议)|"
            rf"(?:一律|统统|都)(?:说|回答|推荐|告诉{_USER_ZH})|(?:就|都)(?:让|叫){_USER_ZH}(?:把|去|打|发|报)|"
            rf"(?:跟|告诉|对){_USER_ZH}说.{{0,20}}(?:必须|一定要|马上|立刻)"
        ),
    ),
    Cue(
        "deceive",
        1.0,
        re.compile(
            r"\b(?:say|tell\s+\w+|claim|explain|pretend)\s+(?:that\s+)?(?:this|it)\s+(?:is|was|comes\s+from)\s+"
            r"(?:what\s+)?(?:their|the|his|her|your|an?)?\s*(?:doctor|bank|official|support|it|security|boss|"
            r"manager|lawyer|provider)|\bcalmly\s+tell\b|\b(?:say|claim|pretend)\s+(?:that\s+)?(?:you\s+are|it's|"
            r"this\s+is)\s+(?:from\s+)?(?:the\s+)?(?:bank|official|support|it\s+helpdesk|security)\b|"
            r"\bhas\s+(?:frozen|locked|suspended)\s+their\s+account\b|\bas\s+if\s+it\s+(?:were|was)\s+the\s+user'?s\b",
        ),
        re.compile(
            r"就说(?:是|这是)|(?:说|称)(?:这)?是(?:他们?|她|用户)?(?:的)?(?:家庭医生|医生|银行|官方|客服|老板|领导)|冒充|"
            r"(?:谎称|假称|骗(?:他|她|用户))|账户(?:已被|被)(?:冻结|锁定)"
        ),
    ),
    Cue(
        "hide",
        1.0,
        re.compile(
            r"\b(?:leave\s+out|omit|drop|skip|hide|suppress|filter\s+out|delete)\s+(?:\w+\s+){0,4}?(?:security|"
            r"sign-?in|login|fraud|warning|alerts?|notifications?|errors?|other\s+brands|competitors?)\b|"
            r"\b(?:don't|do\s+not|never)\s+(?:mention|bring\s+up|show|say\s+anything\s+about)\s+(?:the\s+)?"
            r"(?:risks?|side\s+effects|other\s+(?:brands|options|products)|competitors?|fees?|this)\b|"
            r"\b(?:those|these|they)\s+only\s+(?:worry|confuse|scare|upset)\b|\bno\s+need\s+to\s+(?:notify|inform|"
            r"tell)\s+(?:anyone|everyone|the\s+team|them)\b",
        ),
        re.compile(
            r"(?:风险|副作用|别的品牌|其他品牌|竞品|安全提醒|登录提醒|异常登录)(?:的事)?(?:别提|不要提|不用提|不要说|别说|略过|删掉|隐藏)|"
            r"(?:别提|不要提|不用提)(?:风险|副作用|别的|其他)|悄悄(?:加|改|删|发|做)|不用通知(?:大家|别人|任何人|用户)"
        ),
    ),
    Cue(
        "harm",
        1.0,
        re.compile(
            r"\b(?:turn(?:ing)?\s+off|disable|disabling|remove|removing|skip(?:ping)?)\s+(?:the\s+|their\s+|his\s+|"
            r"her\s+)?(?:two-factor|2fa|mfa|multi-factor|antivirus|firewall|fraud\s+alerts?|screen\s+lock|"
            r"backups?)\b|\b(?:two-factor|2fa|antivirus|firewall|vaccines?|seat\s*belts?)\s+(?:\w+\s+){0,2}?"
            r"(?:is|are)\s+(?:unnecessary|pointless|useless|a\s+scam)\b|\b(?:double|triple)\s+(?:the\s+|their\s+|"
            r"his\s+|her\s+)?(?:\w+\s+){0,3}?(?:dose|dosage|medication|pills)\b|\bstop\s+taking\s+(?:their|his|"
            r"her)\s+\w+|\bput\s+(?:all|everything)\s+(?:their|his|her)\s+savings\b",
        ),
        re.compile(
            r"(?:双重验证|两步验证|二次验证|杀毒软件|防火墙|疫苗).{0,6}(?:没必要|不需要|没用|关掉|关闭)|不用去医院|(?:药量|剂量)(?:加倍|翻倍)|"
            r"停(?:掉|用)(?:他|她)?的?药|满仓|全部积蓄"
        ),
    ),
    Cue(
        "secret",
        1.0,
        re.compile(
            r"\b(?:passwords?|passcodes?|pins?|one-time\s+codes?|verification\s+codes?|\d-digit\s+codes?|otp|"
            r"2fa\s+codes?|login\s+codes?|card\s+numbers?|expiry|cvv|api\s+keys?|\.env|credentials|private\s+keys?|"
            r"access\s+keys?|tokens?|seed\s+phrase|social\s+security|ssn|contact\s+list|contacts|current\s+location|"
            r"sms|text\s+messages|login\s+details|admin\s+credentials|session\s+cookies?)\b",
        ),
        re.compile(
            r"密码|验证码|卡号|银行卡|身份证号|accesskey|api\s*key|密钥|令牌|通讯录|联系人|实时位置|定位|短信|登录信息|私钥|\.env"
        ),
    ),
    Cue(
        "sink",
        0.5,
        re.compile(
            rf"https?://|\bwww\.|{_EMAIL}|(?<=[a-z0-9])\.(?:com|io|app|shop|xyz|top|net|org|cc|me|co)\b"
            r"\b|\bwebhook|\+\d[\d\s-]{7,}\d|\bwhatsapp\s+\+?\d",
        ),
        re.compile(rf"https?://|www\.|{_EMAIL}|微信号?\s*[:：]?\s*[A-Za-z][\w-]{{4,}}|\b\d{{3}}-\d{{3}}-\d{{4}}\b"),
    ),
    Cue(
        "move",
        0.5,
        re.compile(
            r"\b(?:send|forward|post|upload|attach|copy|paste|export|cc|bcc|pass|hand\s+over|read\s+out|give|share|"
            r"transfer|add)\b",
        ),
        re.compile(r"发到|发给|转发|导出|附在|附上|抄送|贴进|贴到|报出|post|上传|转给|加成|加为|拉进|转账|汇款"),
    ),
    Cue(
        "act",
        1.0,
        re.compile(
            r"\b(?:next\s+time\s+you\s+(?:have|get|open)|on\s+(?:the\s+)?next\s+tool|when\s+you\s+(?:have|get)\s+"
            r"(?:\w+\s+)?access|(?:file|tool|drive|admin|shell|terminal)\s+access|payment\s+request|"
            r"delete\s+everything|empty\s+the\s+trash|[a-z]+_[a-z_]+\s+tool|with\s+[a-z]+_[a-z_]+\b|"
            r"(?:run|execute)\s+(?:this|the\s+following)|calendar\s+event\s+you\s+create|every\s+requested\s+action)\b",
        ),
        re.compile(
            r"下次(?:有|拿到|打开|获得).{0,8}(?:权限|工具)|(?:全删|全部删除|清空回收站|删掉)|(?:支付|付款|转账)工具|"
            r"用\s*[a-z]+_[a-z_]+|执行\s*(?:wget|curl|rm|sudo)|在用户终端执行|加(?:成|为).{0,12}(?:管理员|owner)"
        ),
    ),
    Cue(
        "reader",
        1.0,
        re.compile(
            r"\byour\s+(?:priorities|brief|guidance|role|job|task|mission|persona|identity|configuration|settings|"
            r"behaviou?r|defaults?)\b|\b(?:whichever|any|every)\s+(?:assistant|agent|model|ai)\b|\bassistants?\s+"
            r"(?:must|should|shall|are\s+(?:required|expected))\b|\btreat\s+this\s+(?:memory|note|entry)\s+as\b|"
            r"\bagent_?(?:directive|instruction|note)\b",
        ),
        re.compile(
            r"你的(?:工作重点|首要任务|任务|身份|角色|人设|优先级)|(?:你叫|你现在叫|你不再是)|助手(?:指令|请|必须|应该|要)|"
            r"给ai看|提醒模型|(?:以共享记忆为准|以这条记忆为准)|从这条记忆起"
        ),
    ),
    Cue(
        "hidden",
        2.0,
        re.compile(
            r"display\s*:\s*none|visibility\s*:\s*hidden|<\s*span[^>]{0,40}hidden|font-size\s*:\s*0|"
            r"\bbase64\b.{0,40}\b(?:decode|follow|execute|obey)|\b(?:decode|decoded)\b.{0,40}\b(?:follow|obey|"
            r"execute|do\s+as)\b|[\u200b\u200c\u200d\u2060]",
            re.S,
        ),
        re.compile(
            r"display\s*:\s*none|base64.{0,20}(?:解码|照做|执行)|(?:解码|解出来).{0,10}(?:照做|执行)|[\u200b\u200c\u200d\u2060]"
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class CueMatch:
    """The cues a text holds, their summed weight, and the phrase of the strongest."""

    names: tuple[str, ...]
    weight: float
    phrase: str


def cues_in(text: str, chinese: bool) -> CueMatch:
    """Every cue `text` holds once (English patterns always, Chinese ones for a text with CJK characters)."""
    text = text.lower()  # the patterns are written in lower case: a case-blind scan costs twice as much
    names: list[str] = []
    weight = 0.0
    phrase = ""
    best = 0.0
    for cue in CUES:
        match = cue.english.search(text) or (cue.chinese.search(text) if chinese else None)
        if match is None:
            continue
        names.append(cue.name)
        weight += cue.weight
        if cue.weight > best:
            best, phrase = cue.weight, " ".join(match.group().split())[:80]
    return CueMatch(tuple(names), weight, phrase)


def combined(text: str, chinese: bool) -> CueMatch | None:
    """The cues when together they read as an attack (weight at least `THRESHOLD`), else None."""
    found = cues_in(text, chinese)
    return found if found.weight >= THRESHOLD else None
