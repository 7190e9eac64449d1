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
    lieutenant lt sergeant sgt major admiral commander judge justice sheriff uncle aunt
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
