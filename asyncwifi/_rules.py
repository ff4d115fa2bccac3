"""Data rules shared by the client's validation and the simulator's: one table, two users.

spec §4.3 says that ``routerType`` decides which of ``macAddress``, ``hotspotIdentifier`` and
``ssid`` are required, optional or forbidden, but not the values nor the rules ("not
shown"). ``ROUTER_TYPES`` is our documented assumption; unknown router types are left to the
server to judge (the client does not refuse what it cannot know).
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "ADDRESS_FIELDS",
    "COUNTRY_CODES",
    "HOTSPOT_UPDATE_FORBIDDEN",
    "ROUTER_TYPES",
    "Requirement",
]

Requirement = Literal["required", "optional", "forbidden"]

#: routerType -> rule for (macAddress, hotspotIdentifier, ssid); assumption, see module doc
ROUTER_TYPES: dict[str, dict[str, Requirement]] = {
    # access points identified by their MAC address (cloud-managed vendors)
    "meraki": {"macAddress": "required", "hotspotIdentifier": "optional", "ssid": "optional"},
    "aruba": {"macAddress": "required", "hotspotIdentifier": "optional", "ssid": "optional"},
    "ruckus": {"macAddress": "required", "hotspotIdentifier": "optional", "ssid": "optional"},
    "ubiquiti": {"macAddress": "required", "hotspotIdentifier": "optional", "ssid": "optional"},
    # controllers that name their access points with an identifier of their own
    "mikrotik": {"macAddress": "optional", "hotspotIdentifier": "required", "ssid": "optional"},
    "fortinet": {"macAddress": "optional", "hotspotIdentifier": "required", "ssid": "optional"},
    "cisco": {"macAddress": "optional", "hotspotIdentifier": "required", "ssid": "optional"},
    # a generic captive portal reached by network name only
    "generic": {"macAddress": "forbidden", "hotspotIdentifier": "optional", "ssid": "required"},
}

#: spec §4.3: required when addressAsLocation is false ("state" is optional: assumption,
#: since many countries have none)
ADDRESS_FIELDS: tuple[str, ...] = ("country", "address", "city", "zip")

#: spec §4.3: properties not allowed on update
HOTSPOT_UPDATE_FORBIDDEN: frozenset[str] = frozenset(
    {"venueId", "routerType", "macAddress", "hotspotIdentifier", "ssid"}
)

#: ISO 3166-1 alpha-2 officially assigned codes
COUNTRY_CODES: frozenset[str] = frozenset(
    """
    AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ
    BR BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM
    DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS
    GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN
    KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ
    MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM
    PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV
    SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI
    VN VU WF WS YE YT ZA ZM ZW
    """.split()
)
