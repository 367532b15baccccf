-- ADL Q3: the transverse momentum of the jets with |eta| < 1.
-- Two lists unnested in one SELECT are read side by side, jet by jet.
SELECT CAST(pt AS DOUBLE) AS x
FROM (SELECT unnest(Jet_pt) AS pt, unnest(Jet_eta) AS eta FROM events)
WHERE abs(eta) < 1
