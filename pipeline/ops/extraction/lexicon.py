"""Word lists for offline extraction (English). Data, not logic: edit here to tune spotting and typing.

Everything is lower-case; lookups lower-case the word first.
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Function words: capitalised only because they open a sentence or a quotation. Stripped from the
# edges of a name ('The Times' -> 'Times') and never a name on their own.
STOP_WORDS = _words(
    """
    a an the this that these those there here it its it's i i'm i'll i've i'd me my mine we our ours us you
    your yours he him his she her hers they them their theirs who whom whose which what whatever whoever
    when where why how whether if unless until while whilst because since though although as so than
    then thus hence therefore however moreover furthermore meanwhile nevertheless nonetheless otherwise
    instead also too yet still already again once twice never ever always often sometimes usually later
    earlier today tomorrow yesterday tonight now soon perhaps maybe indeed certainly surely truly really
    only just even almost nearly quite rather very much many more most less least few fewer some any
    all both each every either neither no none nor not nothing something anything everything nobody
    somebody anybody everybody someone anyone everyone such and or but for of in on at to by with from
    into onto upon about above below over under after before during through throughout between among
    against within without toward towards across along around behind beyond near off out up down like
    unlike despite except per via is was are were be been being am do does did done doing have has had
    having will would shall should can could may might must ought let lets let's yes well oh ah
    aha alas hello hi hey bah pooh nay aye ha hah hurrah hush lo o oho pshaw whereupon whereas wherein
    hereby thereby notably according following including regarding concerning considering
    whereat whereof wherefore whereby wherewith hereupon thereupon therein thereof hither thither yonder
    whither whence hence thence nay ay
    yeah yep yup yah nope okay ok um uh uhm umm er erm hmm mm mhm huh wow gosh please sorry thank thanks
    i’m i’ll i’ve i’d it’s let’s that’s there’s what’s we’re we’ve we’ll you’re you’ve you’ll they’re
    he’s she’s don’t didn’t can’t won’t isn’t wasn’t
    he'll she'll they'll we'll you'll he'd she'd they'd we'd you'd couldn't wouldn't shouldn't don't
    didn't can't won't isn't wasn't aren't weren't hasn't haven't hadn't mustn't
    """
)
# Capitalised words that are never a name on their own, though they may begin one ('New York',
# 'First World War', 'Monday Night Football').
NOT_NAMES_ALONE = _words(
    """
    one two three four five six seven eight nine ten first second third last next other another same own
    good great old new little big long high low bad best better worse worst true false sure right wrong
    dear poor see note chapter part section book volume page figure table introduction contents preface
    appendix index end title author credits language release date illustration illustrations produced
    updated jr sr
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday
    """
)

# Lower-case words allowed inside a multi-word name when a capitalised word follows them.
NAME_CONNECTORS = _words("of de da del della di du des van von der den la le y bin al el for upon & and")
# Of those, the ones that may join two capitalised words only right after 'of' ('House of the Rising Sun').
ARTICLE_AFTER_OF = _words("the")

HONORIFICS = _words(
    """
    mr mrs ms miss mister master madam madame mademoiselle monsieur dr doctor sir dame lady lord king queen
    prince princess duke duchess earl count countess baron baroness marquess emperor empress tsar czar
    sultan pharaoh pope president vice senator governor mayor chancellor minister premier professor prof
    rev reverend bishop archbishop cardinal father sister brother general gen colonel col captain capt
    lieutenant lt sergeant sgt major admiral commander judge justice sheriff corporal
    uncle aunt cousin grandfather grandmother grandpa grandma granny
    """
)

# Honorifics dropped from a name of three or more words ('Professor Abraham Van Helsing'); military
# ranks and kinship words are not, as they often start other names ('Major League Baseball').
DROPPED_HONORIFICS = _words(
    """
    mr mrs ms miss mister dr doctor sir dame lady lord professor prof president senator governor mayor
    rev reverend king queen prince princess emperor empress pope judge
    """
)

# Words that, at the head of a name, give its type. The head is the last word, or the word before 'of'.
ORGANIZATION_HEADS = _words(
    """
    university college institute institution school academy seminary company corporation corp inc
    incorporated ltd llc plc co group association society council committee commission agency department
    ministry bureau office party church bank foundation trust fund club team band orchestra choir ensemble
    records press publishing publishers publications journal magazine newspaper gazette times news network
    broadcasting studios studio pictures films airlines airways army navy corps police court parliament
    congress senate assembly league federation union organization organisation hospital museum library
    guild firm media entertainment industries systems technologies labs laboratory laboratories exchange
    board authority administration service services railway railroad motors brewery enterprises holdings
    partners associates fc cathedral abbey monastery
    """
)
GEO_HEADS = _words(
    """
    city county river lake mountain mountains mount mt island islands isle street road avenue lane square
    bay sea ocean valley province state states kingdom republic empire desert coast forest park district
    region bridge hill hills falls canyon peninsula strait gulf harbor harbour town village country
    continent territory prefecture parish borough township oblast canton shire creek glacier volcano cape
    plateau plain plains basin delta lagoon reef archipelago
    """
)
EVENT_HEADS = _words(
    """
    war wars battle revolution olympics games championship championships cup festival election elections
    conference summit treaty expo exposition tournament crisis rebellion uprising siege massacre campaign
    christmas easter eve day olympiad marathon prix series bowl ceremony coronation riot riots strike
    invasion crusade conquest revolt mutiny protest protests
    """
)
# First words that set the type whatever the head is ('Mount Everest', 'Lake Geneva', 'Battle of X').
GEO_FIRST = _words("mount mt lake cape isle fort port")

# Acronyms that name places rather than organisations.
GEO_ACRONYMS = _words("us usa uk ussr uae prc roc drc nyc la dc")
# All-capital tokens that are not acronyms of anything worth a node.
ACRONYM_STOP = _words("i a ok am pm ad bc ce bce tv id vs etc ps ii iii iv vi vii viii ix xi xii xiii")


def _phrases(text: str) -> frozenset[str]:
    return frozenset(p.strip() for p in text.split(",") if p.strip())


GEO_NAMES = _phrases(
    """
    afghanistan,albania,algeria,andorra,angola,argentina,armenia,australia,austria,azerbaijan,bahamas,
    bahrain,bangladesh,barbados,belarus,belgium,belize,benin,bhutan,bolivia,bosnia,botswana,brazil,brunei,
    bulgaria,burkina faso,burundi,cambodia,cameroon,canada,chad,chile,china,colombia,comoros,congo,
    costa rica,croatia,cuba,cyprus,czech republic,czechia,denmark,djibouti,dominica,ecuador,egypt,
    el salvador,eritrea,estonia,eswatini,ethiopia,fiji,finland,france,gabon,gambia,georgia,germany,ghana,
    greece,grenada,guatemala,guinea,guyana,haiti,honduras,hungary,iceland,india,indonesia,iran,iraq,
    ireland,israel,italy,jamaica,japan,jordan,kazakhstan,kenya,kiribati,korea,north korea,south korea,
    kosovo,kuwait,kyrgyzstan,laos,latvia,lebanon,lesotho,liberia,libya,liechtenstein,lithuania,luxembourg,
    madagascar,malawi,malaysia,maldives,mali,malta,mauritania,mauritius,mexico,micronesia,moldova,monaco,
    mongolia,montenegro,morocco,mozambique,myanmar,burma,namibia,nauru,nepal,netherlands,holland,
    new zealand,nicaragua,niger,nigeria,norway,oman,pakistan,palau,palestine,panama,papua new guinea,
    paraguay,peru,philippines,poland,portugal,qatar,romania,russia,rwanda,samoa,san marino,saudi arabia,
    senegal,serbia,seychelles,sierra leone,singapore,slovakia,slovenia,somalia,south africa,spain,
    sri lanka,sudan,south sudan,suriname,sweden,switzerland,syria,taiwan,tajikistan,tanzania,thailand,
    togo,tonga,trinidad,tunisia,turkey,turkmenistan,tuvalu,uganda,ukraine,united arab emirates,
    united kingdom,united states,united states of america,america,uruguay,uzbekistan,vanuatu,vatican,
    venezuela,vietnam,yemen,zambia,zimbabwe,england,scotland,wales,britain,great britain,
    northern ireland,soviet union,prussia,bavaria,
    africa,asia,europe,antarctica,oceania,north america,south america,latin america,middle east,
    caribbean,scandinavia,siberia,
    alabama,alaska,arizona,arkansas,california,colorado,connecticut,delaware,florida,hawaii,idaho,
    illinois,indiana,iowa,kansas,kentucky,louisiana,maine,maryland,massachusetts,michigan,minnesota,
    mississippi,missouri,montana,nebraska,nevada,new hampshire,new jersey,new mexico,new york,
    north carolina,north dakota,ohio,oklahoma,oregon,pennsylvania,rhode island,south carolina,
    south dakota,tennessee,texas,utah,vermont,virginia,washington,west virginia,wisconsin,wyoming,
    ontario,quebec,british columbia,alberta,
    london,paris,berlin,rome,madrid,moscow,tokyo,beijing,new york city,los angeles,chicago,boston,
    philadelphia,toronto,sydney,melbourne,dublin,edinburgh,vienna,amsterdam,brussels,lisbon,athens,
    istanbul,cairo,delhi,new delhi,mumbai,shanghai,hong kong,seoul,mexico city,rio de janeiro,
    buenos aires,san francisco,hollywood,manchester,liverpool,oxford,cambridge
    """
)

# Verbs after (or 'said' before) a name that say it is a person.
PERSON_VERBS = _words(
    """
    said says cried replied asked answered exclaimed whispered muttered growled returned observed added
    shouted laughed smiled sighed thought wondered nodded born died married wrote resigned retired
    """
)
# Words right after a name that make it a person: a pronoun referring back, or a reflexive.
PERSON_FOLLOWERS = _words("himself herself who whom whose")
# Nouns after a possessive name that make the possessor a person ("Scrooge's nephew").
KINSHIP = _words(
    """
    wife husband son daughter father mother brother sister uncle aunt nephew niece cousin grandson
    granddaughter grandfather grandmother widow friend partner clerk servant master mistress sweetheart
    children child family boy girl heart hand face eyes voice head
    """
)
# Descriptive words before a name that do not make it another name ("Old Fezziwig", "Poor Bob").
DESCRIPTORS = _words("old young little poor dear late good")
# Honorifics that name a different person than the bare surname ('Mrs. Fezziwig' is not 'Fezziwig'):
# married and noble titles. Kinship words ('Aunt', 'Cousin') name the same person as the bare name.
OTHER_PERSON_HONORIFICS = _words(
    "mrs ms miss madam madame mademoiselle lady dame duchess countess baroness empress princess queen"
)

# Prepositions that put a following name in a place.
GEO_PREPOSITIONS = _words("in near across throughout outside inside")

# Verbs that make a sentence state something about its subject (for offline claims), besides '-ed' forms.
CLAIM_VERBS = _words(
    """
    is was are were be been has had have becomes became become remains remained serves won wins leads
    led holds held owns owned runs ran makes made takes took gives gave gets got goes went comes came
    sees saw knows knew keeps kept tells told says said writes wrote grows grew finds found leaves left
    begins began brings brought buys bought builds built sells sold pays paid meets met sits sat stands
    stood wins lost loses shows will would can could may might shall should must does did
    """
)

# (claim type, cue words) in priority order; the first type whose cue occurs in the sentence wins.
CLAIM_TYPES: tuple[tuple[str, frozenset[str]], ...] = (
    ("BIRTH", _words("born birth birthplace")),
    ("DEATH", _words("died death killed buried murdered executed")),
    ("MARRIAGE", _words("married marriage wife husband widow widower wed")),
    ("FOUNDING", _words("founded established formed created incorporated")),
    ("AWARD", _words("won award awarded prize honoured honored nominated")),
    ("AUTHORSHIP", _words("wrote written directed composed authored painted designed produced recorded")),
    ("PUBLICATION", _words("published released publishes publication issued")),
    ("MEMBERSHIP", _words("member joined founding belongs played")),
    ("EMPLOYMENT", _words("employed employee worked works served serves clerk hired appointed editor")),
    ("OWNERSHIP", _words("owned owns acquired bought purchased sold")),
    ("LOCATION", _words("located situated lies headquartered based capital")),
)
DEFINITION_CUES = _words("is was are were")  # 'X is a ...' / 'X was the ...'
DEFINITION_FOLLOWERS = _words("a an the one")

SUSPECTED_CUES = _words(
    """
    allegedly reportedly suspected accused rumored rumoured claimed claims purportedly supposedly
    possibly probably perhaps may might believed thought
    """
)
FALSE_CUES = _words("denied denies disproved refuted debunked false untrue")

# Common given names (English-language usage, with frequent European forms). A name that is one of them,
# or starts with one ('Dick Wilkins'), is a person unless a place or organisation rule said otherwise.
GIVEN_NAMES = _words(
    """
    aaron abigail abraham adam adrian agnes alan albert alec alexander alfred alice alison amanda amelia
    amy andrew angela ann anna anne annie anthony antoine antonio arthur barbara beatrice belinda ben
    benjamin bernard bess betsy betty bill billy bob bobby brian bridget carl carlos caroline carol
    catherine cecilia charles charlie charlotte chris christina christine christopher clara claude clare
    colin daniel david deborah dennis dick dolly donald dora dorothy douglas edgar edith edmund edward
    edwin eleanor elijah eliza elizabeth ella ellen emily emma eric ernest esther ethel eugene eva evelyn
    fanny felix ferdinand florence frances francis frank franz fred freddie frederick friedrich gabriel
    george georgiana gerald gertrude gilbert grace gregory hannah harold harriet harry helen henri henry
    herbert hermann hugh ian isaac isabel isabella jack jacob jacques james jane janet jean jeanne jenny
    jeremy jerry jessica jim jimmy joan joe johann johannes john johnny jonathan joseph josephine joshua
    juan judith julia julian juliet karl kate katherine kathleen kevin larry laura lawrence leonard lewis
    lily lizzie louis louisa louise lucy luis lydia mabel madeline maggie margaret maria marian marie
    martha martin mary matilda matthew maud michael miriam molly nancy nathan nathaniel ned nelly nicholas
    noah oliver olivia oscar patrick paul pauline peggy peter philip phoebe pierre polly rachel ralph
    raymond rebecca richard robert robin roger ronald rose ruth sally samuel sarah sam simon sophia sophie
    stephen steve steven susan susanna sylvia ted teresa thomas tim timothy toby tom tony victor vincent
    walter wilhelm will william willie wolfgang
    """
)

# Words that, at the head of a name, make it a person or a being that acts like one ('Ghost of Christmas
# Past', 'the Phantom', 'Prophet'); checked after the organisation, place and event heads.
PERSON_HEADS = _words(
    """
    ghost ghosts spirit spirits phantom god goddess gods angel angels apostle apostles prophet prophets
    saint giant ogre wizard witch fairy king queen prince princess emperor sultan pharaoh pope founder
    groom bride gentleman gentlemen lady ladies man men woman women boy boys girl girls child children
    mother father brother sister son daughter uncle aunt nephew niece wife husband widow family
    """
)
# Nationalities and peoples: they name a place's people, typed as the place ('French', 'Moors').
NATIONALITIES = _words(
    """
    american americans british english french german germans dutch spanish italian italians russian
    russians scottish scots irish welsh greek greeks roman romans chinese japanese indian indians arab
    arabs arabic moor moors moorish turkish turks egyptian egyptians persian persians african africans
    european europeans canadian canadians mexican mexicans swiss swedish norwegian danish polish austrian
    hungarian portuguese jewish israeli israelis christian christians muslim muslims hindu catholic
    protestant
    """
)

# Context that makes a name an organisation: 'joined X', 'X acquired ...', "X's CEO".
ORGANIZATION_BEFORE = _words("joined founded co-founded cofounded acquired")
ORGANIZATION_VERBS = _words("acquired announced hired launched shipped invested employs")
ORGANIZATION_NOUNS = _words(
    "ceo cto cfo founder founders employees headquarters shareholders stock shares board"
)
