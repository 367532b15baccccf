-- ADL Q5: the missing transverse momentum of events with an opposite-charge
-- muon pair of invariant mass between 60 and 120 GeV.
SELECT CAST(MET_pt AS DOUBLE) AS x
FROM events
WHERE nMuon >= 2
  AND any_match(pairs(nMuon), p ->
        Muon_charge[p['i']] <> Muon_charge[p['j']]
        AND inv_mass(Muon_pt[p['i']], Muon_eta[p['i']], Muon_phi[p['i']], Muon_mass[p['i']],
                     Muon_pt[p['j']], Muon_eta[p['j']], Muon_phi[p['j']], Muon_mass[p['j']])
            BETWEEN 60 AND 120)
